import type { FastifyBaseLogger } from 'fastify';
import { newUpstreamBudget, type CallScope, type Credential, type UpstreamBudget, type UpstreamTally } from '../backends/backend.js';
import { ClientGone } from '../errors.js';

/*
 * What one HTTP request carries from the front door to the code that serves
 * it: its id and logger, where its upstream calls are counted (the log line
 * reads it), the signal that stops its work when its client leaves, and what
 * its metrics are labelled with once known. Backends take it as their
 * CallScope.
 */

export interface RequestScope extends CallScope {
  id: string;
  log: FastifyBaseLogger;
  /** Content-Type as the client sent it: the front door reads every body as bytes, each route judges the type. */
  contentType: string | undefined;
  /** Upstream calls made for this request; the backend counts them through the request's credential. */
  tally: UpstreamTally;
  /** Upstream calls this request may start (UPSTREAM_CALLS_PER_REQUEST); the backend spends it. */
  upstreamBudget: UpstreamBudget;
  /** Who is asking, once the route's guard has authenticated the request. */
  credential: Credential | undefined;
  /** The GraphQL operation, once yoga has read it (metrics label). */
  operation: string | undefined;
  /** Set when a GraphQL result carried errors (answered 200 over application/json). */
  graphqlErrors: boolean;
  /** Aborts, with a `ClientGone` reason, once the client went away before its answer. */
  readonly signal: AbortSignal;
  /** The front door calls this when the client's connection closed before the answer was sent. */
  leave(): void;
}

/**
 * The scope of a request as yoga sees it (its Fetch Request), for the code
 * behind yoga's handler: handing the scope over as yoga's server context
 * would have it copied twice per request.
 */
export const scopeOfRequest = new WeakMap<Request, RequestScope>();

export function newScope(id: string, log: FastifyBaseLogger, contentType: string | undefined, upstreamCallsPerRequest: number): RequestScope {
  // Made on first use: most requests (memory backend, cache hits, probes) never need a signal.
  let owner: AbortController | undefined;
  let gone = false;
  return {
    id,
    log,
    contentType,
    tally: { upstreamCalls: 0, upstreamMs: 0 },
    upstreamBudget: newUpstreamBudget(upstreamCallsPerRequest),
    credential: undefined,
    operation: undefined,
    graphqlErrors: false,
    get signal() {
      owner ??= new AbortController();
      if (gone && !owner.signal.aborted) owner.abort(new ClientGone());
      return owner.signal;
    },
    leave() {
      gone = true;
      owner?.abort(new ClientGone());
    },
  };
}
