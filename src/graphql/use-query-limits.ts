import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import {
  GraphQLError,
  Kind,
  type DocumentNode,
  NoSchemaIntrospectionCustomRule,
  type ExecutionArgs,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type ValidationContext,
} from 'graphql';
import { usePayloadFormatter, type Plugin } from 'graphql-yoga';
import type { QueryLimits } from '../config/config.js';
import { documentNesting, jsonTooDeep, MAX_JSON_DEPTH } from '../contract/contract.js';
import { ErrorCode, withShortQuotes } from '../errors.js';
import { refuseOperation } from '../refusals/operation-refusals.js';
import { operationCost } from './operation-cost.js';
import { refuseInParams, type OperationRules } from './operation-rules.js';
import { withoutSuggestion } from './without-suggestion.js';

/*
 * Bounds on what one operation may ask (GraphQL Armor: depth, aliases,
 * directives, tokens; our own cost, which counts list arguments with the
 * variables known), introspection and field suggestions. Armor's act while the
 * document is parsed or validated, the cost once the variables are known,
 * before execution starts: a refused operation never reaches a resolver, a
 * loader or the backend.
 */

/**
 * An error as a client gets it: a code (parse and validation errors carry
 * none of their own; neither do graphql-js's refusals of variables) and no
 * bulk of its own input (graphql-js quotes refused values and names whole).
 */
function forClient<E extends Error>(error: E): E | GraphQLError {
  if (!(error instanceof GraphQLError)) return error;
  const message = withShortQuotes(error.message);
  const code = error.extensions.code ?? (error.path === undefined ? ErrorCode.BAD_USER_INPUT : undefined);
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

type Shape = <E extends Error>(error: E) => E | GraphQLError;

function useErrorCodes(shape: Shape): Plugin {
  return {
    onParse:
      () =>
      ({ result, replaceParseResult }) => {
        if (result instanceof GraphQLError) replaceParseResult(shape(result));
      },
    onValidate:
      () =>
      ({ result, setResult }) => {
        if (result.length > 0) setResult(result.map(shape));
      },
  };
}

/** Errors of execution (variables refused, fields failed) on every transport, streams included. */
const useClientErrors = (shape: Shape): Plugin =>
  usePayloadFormatter((result: ExecutionResult) => {
    const { errors } = result;
    if (!errors?.some((error) => shape(error) !== error)) return false;
    return { ...result, errors: errors.map(shape) };
  }) as Plugin;

/**
 * yoga refuses a body that is not JSON with the parser's own message under
 * `extensions.originalError`, and V8's message quotes the body (900 KB in,
 * 900 KB out): the client gets yoga's sentence and one of our `ErrorCode`s.
 */
const useNoParserEcho = (): Plugin => ({
  onResultProcess({ result, setResult }) {
    if (Array.isArray(result) || Symbol.asyncIterator in result) return;
    const { errors } = result as ExecutionResult;
    if (!errors?.some((error) => error.extensions.originalError !== undefined)) return;
    setResult({
      ...result,
      // A request that is not even JSON is a 400 on every media type.
      errors: errors.map(
        ({ message }) => new GraphQLError(message, { extensions: { code: ErrorCode.BAD_USER_INPUT, http: { status: 400 } } }),
      ),
    });
  },
});

type CostArgs = Pick<ExecutionArgs, 'schema' | 'document' | 'operationName' | 'variableValues'>;

function operationOf(args: CostArgs): { operation: OperationDefinitionNode | undefined; fragments: Map<string, FragmentDefinitionNode> } {
  let operation: OperationDefinitionNode | undefined;
  let operations = 0;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of args.document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    operations += 1;
    if (args.operationName ? definition.name?.value === args.operationName : operations === 1) operation = definition;
  }
  // Without a name, only a document of one operation names one (graphql-js refuses the rest itself).
  return { operation: args.operationName || operations === 1 ? operation : undefined, fragments };
}

/**
 * MAX_COST's rule (operation-cost.ts) for an operation and its variables: whether it is refused, and whether no
 * variable could change that (`fixed`), which its plugin below remembers per document.
 */
function costExceeds(
  args: CostArgs,
  maxCost: number,
): { exceeds: boolean; fixed: boolean; cost: number; operation: OperationDefinitionNode | undefined } {
  const { operation, fragments } = operationOf(args);
  if (!operation) return { exceeds: false, fixed: false, cost: 0, operation };
  const { cost, fixed } = operationCost({ schema: args.schema, operation, fragments, variables: args.variableValues });
  return { exceeds: cost > maxCost, fixed, cost, operation };
}

/**
 * MAX_COST, counted once the variables are known (operation-cost.ts):
 * `transactions(ids: $ids)` costs as many reads as `$ids` holds. Refused like
 * a validation error (BAD_USER_INPUT, 400 under GraphQL over HTTP's media type).
 */
function useOperationCost(maxCost: number): Plugin {
  // Documents whose cost no variable changes, known to pass: yoga's parse cache hands the same node back.
  const passing = new WeakMap<DocumentNode, string | undefined>();
  const refusal = (args: ExecutionArgs): GraphQLError | undefined => {
    if (passing.has(args.document) && passing.get(args.document) === (args.operationName ?? undefined)) return undefined;
    const { exceeds, fixed, cost, operation } = costExceeds(args, maxCost);
    if (!operation) return undefined;
    if (!exceeds) {
      if (fixed) passing.set(args.document, args.operationName ?? undefined);
      return undefined;
    }
    return refuseOperation.costExceeded(cost, maxCost, operation);
  };
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const error = refusal(args);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const error = refusal(args);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}

/*
 * Armor's validation rules throw by default, which aborts validation with a
 * bare error; reported instead, each refusal is an ordinary validation error
 * (a code, a location, and the GraphQL-over-HTTP status).
 */
const reportedAs = (shape: Shape) => ({
  propagateOnRejection: false,
  exposeLimits: true,
  onReject: [(context: ValidationContext | null, error: GraphQLError) => context?.reportError(shape<GraphQLError>(error))],
});

/** Deepest bracket nesting a document may have: well past MAX_DEPTH plus a JSON literal of MAX_JSON_DEPTH. */
export const MAX_DOCUMENT_NESTING = 256;

/**
 * Refuses a request whose document or variables nest too deeply, before
 * anything recursive (the parser, the token counter, a clone) walks them.
 */
function nestingProblem(params: { query?: unknown; variables?: unknown; extensions?: unknown }): GraphQLError | undefined {
  if (typeof params.query === 'string' && documentNesting(params.query) > MAX_DOCUMENT_NESTING) {
    return refuseOperation.documentTooNested(MAX_DOCUMENT_NESTING);
  }
  if (jsonTooDeep(params.variables) || jsonTooDeep(params.extensions)) return refuseOperation.paramsTooNested(MAX_JSON_DEPTH);
  return undefined;
}

/** The rules of query limits, by name (operation-rules.ts puts them in order). */
export function queryLimitRules(
  limits: QueryLimits,
): Pick<OperationRules, 'document-nesting' | 'query-limits' | 'max-cost' | 'introspection' | 'error-codes'> {
  // One shaping of every error a client gets (INTROSPECTION=off adds taking out the hints), in one hook per stage.
  const shape: Shape = limits.fieldSuggestions ? forClient : (error) => forClient(withoutSuggestion(error));
  const reported = reportedAs(shape);
  return {
    'document-nesting': [
      {
        onParams(payload) {
          const problem = nestingProblem(payload.params);
          if (problem) refuseInParams(payload, problem);
        },
      },
    ],
    'query-limits': [
      EnvelopArmorPlugin({
        maxDepth: { n: limits.maxDepth, ignoreIntrospection: true, flattenFragments: true, ...reported },
        maxAliases: { n: limits.maxAliases, ...reported },
        // Counted with the variables known instead (useOperationCost): Armor's sees no list's length.
        costLimit: { enabled: false },
        maxDirectives: { n: limits.maxDirectives, ...reported },
        // Counted while parsing, before there is a validation context: a parse error.
        maxTokens: { n: limits.maxTokens, exposeLimits: true },
        // Ours instead (without-suggestion.ts): Armor's misses enum values and variables.
        blockFieldSuggestion: { enabled: false },
      }),
    ],
    'max-cost': [useOperationCost(limits.maxCost)],
    introspection: limits.introspection
      ? []
      : [{ onValidate: ({ addValidationRule }) => addValidationRule(NoSchemaIntrospectionCustomRule) }],
    // After the limits, so they see the errors of every rule above.
    'error-codes': [useErrorCodes(shape), useClientErrors(shape), useNoParserEcho()],
  };
}
