import type { Backend, Credential } from '../backends/backend.js';
import { boundedCache } from '../backends/bounded-cache.js';
import type { Transaction } from '../contract/contract.js';
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
  /** Most reads remembered; the least recently used go first. @default 10000 */
  maxEntries?: number;
}

export function createEventTransactions(backend: Backend, options: EventTransactionsOptions = {}): EventTransactions {
  const reads = boundedCache<Promise<Transaction>>({ max: options.maxEntries ?? 10_000, ttlMs: options.ttlMs ?? 60_000 });

  return {
    load(event, credential) {
      const key = `${event.eventId}\u0000${credential.authorization}`;
      const held = reads.get(key);
      if (held) return held;
      const promise = backend.getTransaction(event.transactionId, credential);
      // A failed read is not kept: the next subscriber tries again.
      promise.catch(() => reads.peek(key) === promise && reads.delete(key));
      reads.set(key, promise);
      return promise;
    },
  };
}
