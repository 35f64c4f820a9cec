import type { Backend, Credential } from './backend.js';
import { forgetTransactionReads, readKey, type ReadKind } from './read-keys.js';

/*
 * Concurrent identical reads share one call: the first asks the backend, the
 * others wait for its answer. The key holds the client's credential, so
 * clients with different keys never share an answer. A webhook about a
 * transaction detaches the reads of it in flight, so no read that joins after
 * the event gets the state from before it.
 */

export function createCoalescingBackend(inner: Backend): Backend {
  const inFlight = new Map<string, Promise<unknown>>();

  function share<T>(kind: ReadKind, parts: Array<string | undefined>, credential: Credential, call: () => Promise<T>): Promise<T> {
    const key = readKey(kind, parts, credential);
    const current = inFlight.get(key);
    if (current) return current as Promise<T>;
    const promise = call().finally(() => {
      if (inFlight.get(key) === promise) inFlight.delete(key);
    });
    inFlight.set(key, promise);
    return promise;
  }

  return {
    // A shared call is counted for the request that started it.
    getTransaction: (id, credential, scope) => share('transaction', [id], credential, () => inner.getTransaction(id, credential, scope)),
    getVending: (id, query, credential, scope) => share('vending', [id, query.products], credential, () => inner.getVending(id, query, credential, scope)),
    listVendings: (query, credential, scope) => share('vendings', [query.products], credential, () => inner.listVendings(query, credential, scope)),
    updatePayment: (id, payment, credential, scope) => inner.updatePayment(id, payment, credential, scope),
    noteTransactionUpdate(transaction) {
      forgetTransactionReads(inFlight, transaction.transactionId);
      inner.noteTransactionUpdate?.(transaction);
    },
    watchTransactionChanges: inner.watchTransactionChanges?.bind(inner),
    close: () => inner.close(),
  };
}
