import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import {
  getOperationAST,
  GraphQLError,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type Source,
  type SourceLocation,
  OperationTypeNode,
  visit,
  BREAK,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';

/*
 * Queries and mutations run compiled (graphql-jit, as Mercurius runs them):
 * a document that comes again is compiled once into plain JavaScript for its
 * operation and reused for every request that sends it (yoga's parse cache
 * hands back the same DocumentNode, and forgets it as it forgets the node).
 * Subscriptions keep graphql-js's executor (the shared subscriptions and their
 * filters are built on it), and so does a document graphql-jit cannot compile
 * or that asks for incremental delivery (`@defer`, `@stream`).
 *
 * Variables it refuses are refused again by graphql-js, whose words clients
 * know. graphql-jit reports errors with its own GraphQLError (no `extensions`
 * object unless the original error had one); they are turned into
 * graphql-js's, so masking, codes and the error shaping downstream see what
 * the other executor gives them.
 */

type Compiled = CompiledQuery | 'interpret';

/** Per document and operation name: what compiled (or could not), or how often it ran before compiling. */
const compiledByDocument = new WeakMap<DocumentNode, Map<string, Compiled | number>>();

/**
 * Runs of a document interpreted before it is compiled: a document sent once (or an attacker's stream of new ones) costs no compilation.
 */
const RUNS_BEFORE_COMPILING = 1;

function compiledFor(args: ExecutionArgs): Compiled {
  let byName = compiledByDocument.get(args.document);
  if (!byName) compiledByDocument.set(args.document, (byName = new Map()));
  const name = args.operationName ?? '';
  const known = byName.get(name) ?? 0;
  if (typeof known !== 'number') return known;
  if (known < RUNS_BEFORE_COMPILING) {
    byName.set(name, known + 1);
    return 'interpret';
  }
  const result =
    getOperationAST(args.document, args.operationName)?.operation === OperationTypeNode.SUBSCRIPTION || deliversIncrementally(args.document)
      ? undefined
      : compileQuery(args.schema, args.document, args.operationName ?? undefined);
  const compiled = result && isCompiledQuery(result) ? result : 'interpret';
  byName.set(name, compiled);
  return compiled;
}

/** Whether the document asks for incremental delivery (`@defer`, `@stream`), which graphql-jit does not give. */
function deliversIncrementally(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'defer' || node.name.value === 'stream') {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/** Offsets in `source` of 1-based line/column locations, as graphql-js errors carry them (`positions`). */
function positionsIn(source: Source, locations: readonly SourceLocation[]): number[] {
  const lineStarts = [0];
  for (let at = source.body.indexOf('\n'); at !== -1; at = source.body.indexOf('\n', at + 1)) lineStarts.push(at + 1);
  return locations.map(({ line, column }) => (lineStarts[line - 1] ?? 0) + column - 1);
}

/** graphql-jit's error as graphql-js's: its locations (as positions in the source), path, cause and the cause's extensions. */
function asGraphQLError(error: GraphQLError, source: Source | undefined): GraphQLError {
  const original = error.originalError;
  return new GraphQLError(error.message, {
    source,
    positions: source && error.locations ? positionsIn(source, error.locations) : undefined,
    path: error.path,
    originalError: original,
    extensions: original instanceof GraphQLError ? original.extensions : (error.extensions ?? undefined),
  });
}

function withGraphQLErrors(result: ExecutionResult, document: DocumentNode): ExecutionResult {
  if (!result.errors?.length) return result;
  // In graphql-js's order (errors first), so an answer is the same bytes whichever executor ran.
  const errors = result.errors.map((error) => asGraphQLError(error, document.loc?.source));
  return result.extensions === undefined ? { errors, data: result.data } : { errors, data: result.data, extensions: result.extensions };
}

export function useCompiledExecution(): Plugin {
  return {
    onExecute({ executeFn, setExecuteFn }) {
      // Compiled for the document it is given when it runs: a plugin after this one may run another (the response
      // cache adds the fields it tags entries with).
      setExecuteFn(async (execution) => {
        const compiled = compiledFor(execution);
        if (compiled === 'interpret') return executeFn(execution);
        const result = await compiled.query(execution.rootValue, execution.contextValue, execution.variableValues);
        // No data: the variables were refused before anything ran. graphql-js words (and hints) those refusals as
        // clients know them, with the status GraphQL over HTTP gives them; it runs nothing either.
        if (result.data === undefined && result.errors?.length) return executeFn(execution);
        return withGraphQLErrors(result, execution.document);
      });
    },
  };
}
