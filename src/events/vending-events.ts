import type { Vending } from '../contract/contract.js';
import type { TransactionUpdateEvent } from './normalize.js';

/*
 * A machine's change, as `vendingUpdated` delivers it. The service sends no
 * webhook for vendings, so the gateway reads them (vending-poller.ts) and
 * publishes what changed through the same machinery as transactions: an
 * event log of its own (in process or in Redis, with replay and resume),
 * whose events have the log's shape. A machine's change is logged with its
 * vendingId where a transaction's id goes, so the per-id filter, the
 * per-account keys and dedupe by content work unchanged: the logged
 * "transaction" is the machine's state as read, so a poll that finds the
 * state the log last published appends nothing, on any instance (what
 * changed and since when it is offline travel beside it, in `raw`).
 */

/** The fields whose change is published (contract part 3: status, flags; and the products a machine holds). */
export const WATCHED_FIELDS = ['status', 'online', 'enabled', 'products'] as const;

export interface VendingUpdate {
  eventId: string;
  /** The account whose machine it is ('' : the default account's, the one the gateway's own key reads). */
  account?: string | undefined;
  /** When the gateway read the change. */
  receivedAt: string;
  vendingId: string;
  /** Which of WATCHED_FIELDS changed since the gateway last read the machine; empty at the first read. */
  changed: string[];
  /** The machine as read, products in the flat view (plain JSON: the same through Redis as in process). */
  vending: Vending;
  /** Since when the gateway sees the machine offline (its first read of it offline); null while online. */
  offlineSince: string | null;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Which watched fields differ between two reads of a machine; none without an earlier read. */
export function vendingChanges(before: Vending | undefined, after: Vending): string[] {
  if (!before) return [];
  return WATCHED_FIELDS.filter((field) => !same(before[field], after[field]));
}

/** The update in the log's shape (see above). */
export function vendingLogEvent(update: VendingUpdate): TransactionUpdateEvent {
  return {
    eventId: update.eventId,
    ...(update.account ? { account: update.account } : {}),
    type: 'vending.update',
    format: 'ENVELOPED',
    receivedAt: update.receivedAt,
    occurredAt: undefined,
    transactionId: update.vendingId,
    status: typeof update.vending.status === 'string' ? update.vending.status : '',
    products: [],
    // What dedupe by content compares: the state alone, never when it was read or what the last read was.
    transaction: update.vending,
    raw: { changed: update.changed, offlineSince: update.offlineSince },
  };
}

/** The update a logged event carries. */
export function vendingUpdateOf(event: TransactionUpdateEvent): VendingUpdate {
  const { changed, offlineSince } = (event.raw ?? {}) as { changed?: unknown; offlineSince?: unknown };
  return {
    eventId: event.eventId,
    account: event.account,
    receivedAt: event.receivedAt,
    vendingId: event.transactionId,
    changed: Array.isArray(changed) ? changed.filter((field): field is string => typeof field === 'string') : [],
    vending: event.transaction as Vending,
    offlineSince: typeof offlineSince === 'string' ? offlineSince : null,
  };
}
