import { GraphQLError } from 'graphql';

/*
 * INTROSPECTION=off (the production default): no error names a part of
 * the schema the client did not. graphql-js ends such messages with "Did you
 * mean …?" for fields, arguments and types while validating, and for enum
 * values and input fields both while validating literals and while coercing
 * variables, which happens at execution. GraphQL Armor's filter sees only
 * validation and only the `Did you mean "x"?` form (not `the enum value
 * "X"`), and leaves a "[Suggestion hidden]" that still says one exists.
 * The query limits' one shaping of client errors (use-query-limits.ts) applies
 * this to parse, validation and execution (variables) errors alike.
 */

const HINT = 'Did you mean';
/** graphql-js's `didYouMean`: names are GraphQL names, so a suggestion holds no `?` of its own. */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

/** The error without graphql-js's "Did you mean …?" (INTROSPECTION=off). */
export function withoutSuggestion<E extends Error>(error: E): E | GraphQLError {
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
