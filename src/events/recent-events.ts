import { boundedCache } from '../backends/bounded-cache.js';
import { accountOf } from '../contract/accounts.js';
import type { DedupeBy } from './event-log.js';
import type { TransactionUpdateEvent } from './normalize.js';
import { transactionDigest } from './transaction-digest.js';

/*
 * What this process remembers of published events, to tell a redelivery from
 * a new event: the event ids published lately, and the content of
 * the last event of each transaction. The in-process log decides with it
 * alone. The Redis log keeps two: one of the events it knows are safe (its
 * own appends, confirmed by a replica when there are replicas), asked before
 * Redis so that a redelivery is still caught after a Redis without
 * persistence restarted and forgot its own keys; and one of the events it
 * handed to its listeners, so that an event appended again after a failover
 * lost it (its webhook was answered 503 and retried) reaches them once. An
 * event not confirmed is never in the first: its retry must reach Redis,
 * which appends it again if a failover lost it.
 *
 * Both are remembered per account: two accounts may well send the same event
 * id, or name the same transaction id, and each account's event is its own.
 */

/** Senders retry for a day or more, so a published event is remembered that long. */
export const DEDUPE_TTL_MS = 86_400_000;

export interface RecentEventsOptions {
  /** How long an event id, and a transaction's last content, is remembered. @default DEDUPE_TTL_MS (24 h) */
  dedupeTtlMs?: number;
  /** Most ids, and most transactions, remembered; the least recently used go first. @default 100000 */
  maxEntries?: number;
  /** @default Date.now */
  now?: () => number;
}

export interface RecentEvents {
  /** Whether the event is new by `dedupeBy`; if so it is remembered as published. */
  admit(event: TransactionUpdateEvent, dedupeBy: DedupeBy): boolean;
  /** Remembers an event as published (confirmed, or handed to listeners). */
  note(event: TransactionUpdateEvent): void;
  /** Forgets an admitted event that could not be kept after all (its webhook was refused): its retry is new again. */
  forget(event: TransactionUpdateEvent): void;
  /** Another event of the transaction was published: a different content remembered for it is no longer the last one, and is forgotten. */
  supersede(event: TransactionUpdateEvent): void;
  /** Whether an event of the same account with the same id was published lately. */
  hasId(event: TransactionUpdateEvent): boolean;
  /** The digest of the last event of the same account's transaction, when remembered. */
  lastDigest(event: TransactionUpdateEvent): string | undefined;
}

/**
 * An id as remembered: the account's name and the id, apart by a ":", which no
 * account name holds, so no account's id can be taken for another's (the
 * default account's name is empty).
 */
const scoped = (event: TransactionUpdateEvent, id: string): string => `${accountOf(event)}:${id}`;

export function createRecentEvents(options: RecentEventsOptions = {}): RecentEvents {
  const ttlMs = options.dedupeTtlMs ?? DEDUPE_TTL_MS;
  const maxEntries = options.maxEntries ?? 100_000;
  const now = options.now ?? Date.now;
  const ids = boundedCache<true>({ max: maxEntries, ttlMs, now });
  const digests = boundedCache<string>({ max: maxEntries, ttlMs, now });

  function note(event: TransactionUpdateEvent, digest = transactionDigest(event.transaction)): void {
    ids.set(scoped(event, event.eventId), true);
    digests.set(scoped(event, event.transactionId), digest);
  }

  return {
    admit(event, dedupeBy) {
      const digest = transactionDigest(event.transaction);
      if (dedupeBy === 'id' ? ids.get(scoped(event, event.eventId)) : digests.get(scoped(event, event.transactionId)) === digest)
        return false;
      note(event, digest);
      return true;
    },
    note: (event) => note(event),
    forget(event) {
      ids.delete(scoped(event, event.eventId));
      digests.delete(scoped(event, event.transactionId));
    },
    supersede(event) {
      const key = scoped(event, event.transactionId);
      const remembered = digests.get(key);
      if (remembered !== undefined && remembered !== transactionDigest(event.transaction)) digests.delete(key);
    },
    hasId: (event) => ids.get(scoped(event, event.eventId)) === true,
    lastDigest: (event) => digests.get(scoped(event, event.transactionId)),
  };
}
