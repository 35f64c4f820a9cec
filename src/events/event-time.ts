import type { TransactionUpdateEvent } from './normalize.js';

/** A sender's clock this far ahead is not believed: its time would hold a transaction's state against every later event. */
export const MAX_CLOCK_AHEAD_MS = 300_000;

/**
 * When an event happened, which orders the events of one transaction (the
 * contract shows no ordering rule, part 6): the envelope's timestamp when
 * readable and not far ahead of receipt, else when the gateway received it.
 */
export function eventTime(event: Pick<TransactionUpdateEvent, 'occurredAt' | 'receivedAt'>): number {
  const received = Date.parse(event.receivedAt);
  const occurred = event.occurredAt === undefined ? Number.NaN : Date.parse(event.occurredAt);
  if (Number.isNaN(occurred) || occurred > received + MAX_CLOCK_AHEAD_MS) return received;
  return occurred;
}
