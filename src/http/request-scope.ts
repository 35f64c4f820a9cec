import type { FastifyBaseLogger } from 'fastify';
import { newUpstreamBudget, type CallScope, type Credential, type UpstreamBudget, type UpstreamTally } from '../backends/backend.js';
import { ConnectedCaller } from '../backends/caller.js';

/*
 * What one HTTP request carries from the front door to the code that serves
 * it: its id and logger, where its upstream calls are counted (the log line
 * reads it), the caller whose leaving stops its work, and what
 * its metrics are labelled with once known. Backends take it as their
 * CallScope.
 */

export interface RequestScope extends CallScope {
  id: string;
  log: FastifyBaseLogger;
  /** Upstream calls made for this request; the backend counts them through the request's credential. */
  tally: UpstreamTally;
  /** Upstream calls this request may start (UPSTREAM_CALLS_PER_REQUEST); the backend spends it. */
  upstreamBudget: UpstreamBudget;
  /** Who is asking, once the route's guard has authenticated the request. */
  credential: Credential | undefined;
  /** Admitted by a single-use subscription token (`?token=`) rather than a key or JWT the client sent. */
  bySubscriptionToken: boolean;
  /** The GraphQL operation, once yoga has read it (metrics label). */
  operation: string | undefined;
  /** Set when a GraphQL result carried errors (answered 200 over application/json). */
  graphqlErrors: boolean;
  /** The front door tells it (`leave()`) when the client's connection closed before the answer was sent. */
  caller: ConnectedCaller;
  /** Set by the route that answers with a stream (SSE): a shutdown ends it instead of waiting for it. */
  stream: boolean;
}

export function newScope(id: string, log: FastifyBaseLogger, upstreamCallsPerRequest: number): RequestScope {
  return {
    id,
    log,
    tally: { upstreamCalls: 0, upstreamMs: 0 },
    upstreamBudget: newUpstreamBudget(upstreamCallsPerRequest),
    credential: undefined,
    bySubscriptionToken: false,
    operation: undefined,
    graphqlErrors: false,
    caller: new ConnectedCaller(),
    stream: false,
  };
}
