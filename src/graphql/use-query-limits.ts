import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, NoSchemaIntrospectionCustomRule, type ValidationContext } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { QueryLimits } from '../config/index.js';
import { documentNesting, jsonTooDeep, MAX_JSON_DEPTH } from '../contract/index.js';
import { useNoSuggestions } from './use-no-suggestions.js';

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

/** Deepest bracket nesting a document may have: well past MAX_DEPTH plus a JSON literal of MAX_JSON_DEPTH. */
export const MAX_DOCUMENT_NESTING = 256;

/**
 * Refuses a request whose document or variables nest too deeply, before
 * anything recursive (the parser, the token counter, a clone) walks them.
 */
export function nestingProblem(params: { query?: unknown; variables?: unknown; extensions?: unknown }): GraphQLError | undefined {
  const refuse = (message: string) => new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
  if (typeof params.query === 'string' && documentNesting(params.query) > MAX_DOCUMENT_NESTING) {
    return refuse(`The document nests deeper than ${MAX_DOCUMENT_NESTING} brackets`);
  }
  if (jsonTooDeep(params.variables) || jsonTooDeep(params.extensions)) return refuse(`Variables and extensions may nest at most ${MAX_JSON_DEPTH} levels`);
  return undefined;
}

export function queryLimitPlugins(limits: QueryLimits): Plugin[] {
  const plugins: Plugin[] = [
    {
      onParams({ params, setResult }) {
        const problem = nestingProblem(params);
        if (problem) setResult({ errors: [problem] });
      },
    },
    EnvelopArmorPlugin({
      maxDepth: { n: limits.maxDepth, ignoreIntrospection: true, flattenFragments: true, ...reported },
      maxAliases: { n: limits.maxAliases, ...reported },
      costLimit: { maxCost: limits.maxCost, ...reported },
      maxDirectives: { n: limits.maxDirectives, ...reported },
      // Counted while parsing, before there is a validation context: a parse error.
      maxTokens: { n: limits.maxTokens, exposeLimits: true },
      // Ours instead (use-no-suggestions.ts): Armor's misses enum values and variables.
      blockFieldSuggestion: { enabled: false },
    }) as Plugin,
  ];
  if (!limits.fieldSuggestions) plugins.push(useNoSuggestions());
  if (!limits.introspection) {
    plugins.push({ onValidate: ({ addValidationRule }) => addValidationRule(NoSchemaIntrospectionCustomRule) });
  }
  // Last, so it sees the errors of every rule above.
  plugins.push(useErrorCodes());
  return plugins;
}
