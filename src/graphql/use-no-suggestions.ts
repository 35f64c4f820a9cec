import { GraphQLError, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/*
 * FIELD_SUGGESTIONS=off (the production default): no error names a part of
 * the schema the client did not. graphql-js ends such messages with "Did you
 * mean …?" for fields, arguments and types while validating, and for enum
 * values and input fields both while validating literals and while coercing
 * variables, which happens at execution. GraphQL Armor's filter sees only
 * validation and only the `Did you mean "x"?` form (not `the enum value
 * "X"`), and leaves a "[Suggestion hidden]" that still says one exists.
 */

const HINT = 'Did you mean';
/** graphql-js's `didYouMean`: names are GraphQL names, so a suggestion holds no `?` of its own. */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

function withoutSuggestion<E extends Error>(error: E): E | GraphQLError {
  if (!(error instanceof GraphQLError) || !error.message.includes(HINT)) return error;
  return new GraphQLError(error.message.replace(SUGGESTION, ''), {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}

function cleaned(result: ExecutionResult): ExecutionResult | undefined {
  if (!result.errors?.some((error) => error.message.includes(HINT))) return undefined;
  return { ...result, errors: result.errors.map(withoutSuggestion) };
}

/** Takes "Did you mean …?" out of validation errors and of results that failed before execution (variables). */
export function useNoSuggestions(): Plugin {
  const onResult = ({ result, setResult }: { result: unknown; setResult: (result: ExecutionResult) => void }) => {
    // A stream's events come from resolvers, which suggest nothing: only a single result is looked at.
    if (result === null || typeof result !== 'object' || Symbol.asyncIterator in result) return;
    const replaced = cleaned(result as ExecutionResult);
    if (replaced) setResult(replaced);
  };
  return {
    onValidate: () => ({ result, setResult }) => {
      if (result.length > 0) setResult(result.map(withoutSuggestion));
    },
    onExecute: () => ({ onExecuteDone: onResult }),
    onSubscribe: () => ({ onSubscribeResult: onResult }),
  };
}
