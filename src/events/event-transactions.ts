import type { Backend, Credential } from '../backends/backend.js';
import type { Transaction } from '../contract/index.js';
import type { TransactionUpdateEvent } from './normalize.js';

/*
 * The full transaction behind an event, read once per event and credential
 * however many subscribers select it.
 * Subscribers with different keys never share a read.
 */

export interface EventTransactions {
  load(event: TransactionUpdateEvent, credential: Credential): Promise<Transaction>;
}

export interface EventTransactionsOptions {
  /** How long a read serves later subscribers of the same event. @default 60000 */
  ttlMs?: number;
  /** Most reads remembered. @default 10000 */
  maxEntries?: number;
}

export function createEventTransactions(backend: Backend, options: EventTransactionsOptions = {}): EventTransactions {
  const ttlMs = options.ttlMs ?? 60_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const reads = new Map<string, { promise: Promise<Transaction>; expires: number }>();

  return {
    load(event, credential) {
      const key = `${event.eventId}\u0000${credential.authorization}`;
      const now = Date.now();
      const held = reads.get(key);
      if (held && held.expires > now) return held.promise;
      const promise = backend.getTransaction(event.transactionId, credential);
      // A failed read is not kept: the next subscriber tries again.
      promise.catch(() => reads.get(key)?.promise === promise && reads.delete(key));
      reads.delete(key);
      reads.set(key, { promise, expires: now + ttlMs });
      if (reads.size > maxEntries) reads.delete(reads.keys().next().value as string);
      return promise;
    },
  };
}
