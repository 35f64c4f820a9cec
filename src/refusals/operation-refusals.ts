import { GraphQLError, type ASTNode } from 'graphql';
import { ErrorCode, httpStatusOf } from '../errors.js';

/*
 * The refusals of a GraphQL operation that are GraphQL's own kind of error
 * rather than a GatewayError: refused in yoga's params stage, while
 * validating or before execution (they carry the place in the document, or
 * GraphQL over HTTP's status, as graphql-js's own refusals do), or a
 * subscription's result. Worded once here, beside refusals.ts; call sites
 * pass only what varies. Clients and tests match the messages as text.
 */

/** The `extensions` of a refusal that fails the whole request with its code's status (yoga reads `http.status`). */
const failingWith = (code: ErrorCode) => ({ code, http: { status: httpStatusOf(code) } });

/** Longest client text an `EVENTS_EXPIRED` message quotes back. */
const QUOTED_CURSOR_CHARS = 64;

export const refuseOperation = {
  // PERSISTED_QUERY_ONLY
  /** TRUSTED_DOCUMENTS=only: a request that sends a document's text, or names no document. */
  trustedOnly: () =>
    new GraphQLError('Only trusted documents are accepted here: send the sha256 of one of schema/operations/', {
      extensions: failingWith(ErrorCode.PERSISTED_QUERY_ONLY),
    }),

  // PERSISTED_QUERY_NOT_FOUND
  /** TRUSTED_DOCUMENTS=only: a hash that names no document of the manifest. */
  unknownTrustedDocument: () =>
    new GraphQLError('Unknown trusted document', { extensions: failingWith(ErrorCode.PERSISTED_QUERY_NOT_FOUND) }),

  // BAD_USER_INPUT
  /** Before parsing: the document's brackets nest deeper than `max`. */
  documentTooNested: (max: number) =>
    new GraphQLError(`The document nests deeper than ${max} brackets`, { extensions: { code: ErrorCode.BAD_USER_INPUT } }),
  /** Before parsing: `variables` or `extensions` nest deeper than `max`. */
  paramsTooNested: (max: number) =>
    new GraphQLError(`Variables and extensions may nest at most ${max} levels`, { extensions: { code: ErrorCode.BAD_USER_INPUT } }),
  /** MAX_COST, counted with the variables known; refused like a validation error, at the operation. */
  costExceeded: (cost: number, maxCost: number, operation: ASTNode) =>
    new GraphQLError(
      `Operation cost ${Math.ceil(cost)} exceeds MAX_COST (${maxCost}); a list argument counts once per item, so ask for fewer ids ` +
        `or fewer fields at once`,
      { nodes: [operation], extensions: { code: ErrorCode.BAD_USER_INPUT, limit: 'MAX_COST', http: { status: 400, spec: true } } },
    ),
  /** graphql-ws: a `subscribe` past the connection's limit; an `error` for that id alone. */
  tooManySubscriptions: (max: number) =>
    new GraphQLError(`At most ${max} subscriptions per connection`, { extensions: { code: ErrorCode.BAD_USER_INPUT } }),

  // No code: validation errors, like graphql-js's own (the query limits' shaping gives them BAD_USER_INPUT).
  /** The draft spec's "single root field": `@skip` / `@include` at a subscription's top level. `name`: the operation's, if any. */
  conditionalSubscriptionRoot: (name: string | undefined, selection: ASTNode) =>
    new GraphQLError(
      `${name === undefined ? 'An anonymous subscription' : `Subscription "${name}"`} must not use @skip or @include in its top level ` +
        `selection: its one root field always runs.`,
      { nodes: selection },
    ),
  /** graphql-ws: an operation that neither ran nor was refused with errors; graphql-ws's own words for it. */
  unidentifiedOperation: () => new GraphQLError('Unable to identify operation'),

  // EVENTS_EXPIRED
  /**
   * `after` named an event the log no longer reaches: the client must reload.
   * `now`, as `extensions.cursor`, is where to resume (event-log.ts says which).
   */
  eventsExpired: (cursor: string, now: string) => {
    const shown = cursor.length > QUOTED_CURSOR_CHARS ? `${cursor.slice(0, QUOTED_CURSOR_CHARS)}…` : cursor;
    return new GraphQLError(
      `Event ${JSON.stringify(shown)} is older than the event log reaches (or unknown); reload, then subscribe after extensions.cursor`,
      { extensions: { code: ErrorCode.EVENTS_EXPIRED, cursor: now } },
    );
  },
};
