import type { Transaction, Vending } from '../contract/contract.js';
import type { Backend, VendingQuery } from './backend.js';
import { boundedCache } from './bounded-cache.js';
import { forgetTransactionReads, readKey } from './read-keys.js';

/*
 * A short-lived entity cache of transactions and vendings, keyed by
 * credential (one client's answer is never served to another). A webhook
 * about a transaction, or a payment update through the gateway, drops what is
 * held of it for every credential, and a read that started before the drop
 * does not refill it, so no read after an event sees the state before it.
 * Vendings have no events: they are bounded by the TTL alone.
 */

export interface CachingOptions {
  /** How long an entry is served. */
  ttlMs: number;
  /** Most entries held; the least recently used goes first. @default 10000 */
  maxEntries?: number;
  /** @default Date.now */
  now?: () => number;
  /** Told whenever what is held of a transaction is dropped (the GraphQL response cache drops its results too). */
  onForget?: (transactionId: string) => void;
}

export function createCachingBackend(inner: Backend, options: CachingOptions): Backend {
  const entries = boundedCache<object>({ max: options.maxEntries ?? 10_000, ttlMs: options.ttlMs, now: options.now });
  /** Bumped on every invalidation of a transaction, so reads in flight can tell they are stale. */
  const versions = new Map<string, number>();

  async function cached<T extends object>(key: string, transactionId: string | undefined, load: () => Promise<T>): Promise<T> {
    const hit = entries.get(key);
    if (hit !== undefined) return hit as T;
    const version = transactionId === undefined ? 0 : (versions.get(transactionId) ?? 0);
    const value = await load();
    if (transactionId === undefined || (versions.get(transactionId) ?? 0) === version) entries.set(key, value);
    return value;
  }

  function forgetTransaction(id: string): void {
    versions.set(id, (versions.get(id) ?? 0) + 1);
    forgetTransactionReads(entries, id);
    options.onForget?.(id);
  }

  return {
    getTransaction: (id, credential, scope) =>
      cached<Transaction>(readKey('transaction', [id], credential), id, () => inner.getTransaction(id, credential, scope)),
    getVending: (id, query: VendingQuery, credential, scope) =>
      cached<Vending>(readKey('vending', [id, query.products], credential), undefined, () =>
        inner.getVending(id, query, credential, scope),
      ),
    listVendings: (query, credential, scope) =>
      cached<Vending[]>(readKey('vendings', [query.products], credential), undefined, () => inner.listVendings(query, credential, scope)),
    async updatePayment(id, payment, credential, scope) {
      forgetTransaction(id);
      try {
        return await inner.updatePayment(id, payment, credential, scope);
      } finally {
        forgetTransaction(id);
      }
    },
    noteTransactionUpdate(transaction, at, account) {
      forgetTransaction(transaction.transactionId);
      inner.noteTransactionUpdate?.(transaction, at, account);
    },
    watchTransactionChanges: inner.watchTransactionChanges?.bind(inner),
    close: () => inner.close(),
  };
}
