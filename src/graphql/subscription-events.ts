import { textIdProblem } from '../contract/contract.js';
import { refuse } from '../refusals/refusals.js';
import type { LoggedEvent } from '../events/event-log.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import type { GatewayContext } from './context.js';

/*
 * What every subscription over an event log does alike (`transactionUpdated`,
 * `vendingUpdated`): where it resumes, and what one delivered event does to
 * the subscription's context.
 */

/**
 * Where a subscription resumes: its own `after`, else the one its connection carries (SSE's Last-Event-ID,
 * graphql-ws's `connectionParams.after`), which a client that resubscribes from a copy of its variables
 * (Apollo's and urql's links) can still move forward on every event.
 * An event id is only kept, never put in a path: the rule for text ids, not the one for resource ids.
 */
export function resumePoint(after: string | null | undefined, connectionAfter: unknown): string | undefined {
  const own = after !== null && after !== undefined && after !== '';
  const value = own ? after : connectionAfter;
  if (value === undefined) return undefined;
  const where = own ? 'after' : "the connection's after (connectionParams.after or Last-Event-ID)";
  if (typeof value !== 'string') throw refuse.lastEventIdNotText(where);
  const problem = textIdProblem(value);
  if (problem) throw refuse.invalidArgument(where, problem);
  return value;
}

/** The event a subscription delivers, its context made ready to answer it alone (and SSE to name its position). */
export function deliveredEvent({ event, position }: LoggedEvent, ctx: GatewayContext): TransactionUpdateEvent {
  // The subscription's context outlives one event: nothing read for an earlier one may answer this one.
  ctx.loaders.clearAll();
  // Each event is answered like a request of its own: its reads get the whole budget.
  if (ctx.scope.upstreamBudget) ctx.scope.upstreamBudget.started = 0;
  ctx.currentEvent.eventId = event.eventId;
  ctx.currentEvent.position = position;
  // Its delivery span (use-tracing.ts) is linked to the webhook that published it.
  ctx.currentEvent.traceContext = event.traceContext;
  if (event.traceContext) ctx.currentEvent.deliveryStartedAt = performance.timeOrigin + performance.now();
  return event;
}
