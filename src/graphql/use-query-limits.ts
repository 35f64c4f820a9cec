import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, NoSchemaIntrospectionCustomRule, type ExecutionResult, type ValidationContext } from 'graphql';
import { usePayloadFormatter, type Plugin } from 'graphql-yoga';
import type { QueryLimits } from '../config/index.js';
import { documentNesting, jsonTooDeep, MAX_JSON_DEPTH } from '../contract/index.js';
import { withShortQuotes } from '../errors.js';

/*
 * Bounds on what one operation may ask (GraphQL Armor: depth, cost, aliases,
 * directives, tokens), introspection and field suggestions. All act while the
 * document is parsed or validated, so a refused operation never reaches a
 * resolver, a loader or the backend.
 */

/**
 * An error as a client gets it: a code (parse and validation errors carry
 * none of their own; neither do graphql-js's refusals of variables) and no
 * bulk of its own input (graphql-js quotes refused values and names whole).
 */
function forClient<E extends Error>(error: E): E | GraphQLError {
  if (!(error instanceof GraphQLError)) return error;
  const message = withShortQuotes(error.message);
  const code = error.extensions.code ?? (error.path === undefined ? 'BAD_USER_INPUT' : undefined);
  if (message === error.message && code === error.extensions.code) return error;
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: code === undefined ? error.extensions : { ...error.extensions, code },
  });
}

function useErrorCodes(): Plugin {
  return {
    onParse: () => ({ result, replaceParseResult }) => {
      if (result instanceof GraphQLError) replaceParseResult(forClient(result));
    },
    onValidate: () => ({ result, setResult }) => {
      if (result.length > 0) setResult(result.map(forClient));
    },
  };
}

/** Errors of execution (variables refused, fields failed) on every transport, streams included. */
const useClientErrors = (): Plugin =>
  usePayloadFormatter((result: ExecutionResult) => {
    const { errors } = result;
    if (!errors?.some((error) => forClient(error) !== error)) return false;
    return { ...result, errors: errors.map(forClient) };
  }) as Plugin;

/*
 * Armor's validation rules throw by default, which aborts validation with a
 * bare error; reported instead, each refusal is an ordinary validation error
 * (a code, a location, and the GraphQL-over-HTTP status).
 */
const reported = {
  propagateOnRejection: false,
  exposeLimits: true,
  onReject: [(context: ValidationContext | null, error: GraphQLError) => context?.reportError(forClient(error) as GraphQLError)],
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
      blockFieldSuggestion: { enabled: !limits.fieldSuggestions },
    }) as Plugin,
  ];
  if (!limits.introspection) {
    plugins.push({ onValidate: ({ addValidationRule }) => addValidationRule(NoSchemaIntrospectionCustomRule) });
  }
  // Last, so they see the errors of every rule above.
  plugins.push(useErrorCodes(), useClientErrors());
  return plugins;
}
