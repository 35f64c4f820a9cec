import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, NoSchemaIntrospectionCustomRule, type ValidationContext } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { QueryLimits } from '../config.js';

/*
 * Bounds on what one operation may ask (GraphQL Armor: depth, cost, aliases,
 * directives, tokens), introspection and field suggestions. All act while the
 * document is parsed or validated, so a refused operation never reaches a
 * resolver, a loader or the backend.
 */

/** Parse and validation errors carry no code of their own; a client needs one to react to. */
function withCode<E extends Error>(error: E): E | GraphQLError {
  if (!(error instanceof GraphQLError) || error.extensions.code) return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    extensions: { ...error.extensions, code: 'BAD_USER_INPUT' },
  });
}

function useErrorCodes(): Plugin {
  return {
    onParse: () => ({ result, replaceParseResult }) => {
      if (result instanceof GraphQLError) replaceParseResult(withCode(result));
    },
    onValidate: () => ({ result, setResult }) => {
      if (result.length > 0) setResult(result.map(withCode));
    },
  };
}

/*
 * Armor's validation rules throw by default, which aborts validation with a
 * bare error; reported instead, each refusal is an ordinary validation error
 * (a code, a location, and the GraphQL-over-HTTP status).
 */
const reported = {
  propagateOnRejection: false,
  exposeLimits: true,
  onReject: [(context: ValidationContext | null, error: GraphQLError) => context?.reportError(withCode(error) as GraphQLError)],
};

export function queryLimitPlugins(limits: QueryLimits): Plugin[] {
  const plugins: Plugin[] = [
    EnvelopArmorPlugin({
      maxDepth: { n: limits.maxDepth, ignoreIntrospection: true, flattenFragments: true, ...reported },
      maxAliases: { n: limits.maxAliases, ...reported },
      costLimit: { maxCost: limits.maxCost, ...reported },
      maxDirectives: { n: limits.maxDirectives, ...reported },
      // Counted while parsing, before there is a validation context: a parse error.
      maxTokens: { n: limits.maxTokens, exposeLimits: true },
      blockFieldSuggestion: { enabled: !limits.fieldSuggestions },
    }) as Plugin,
  ];
  if (!limits.introspection) {
    plugins.push({ onValidate: ({ addValidationRule }) => addValidationRule(NoSchemaIntrospectionCustomRule) });
  }
  // Last, so it sees the errors of every rule above.
  plugins.push(useErrorCodes());
  return plugins;
}
