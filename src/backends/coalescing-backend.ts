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
    getTransaction: (id, credential) => share('transaction', [id], credential, () => inner.getTransaction(id, credential)),
    getVending: (id, query, credential) => share('vending', [id, query.products], credential, () => inner.getVending(id, query, credential)),
    listVendings: (query, credential) => share('vendings', [query.products], credential, () => inner.listVendings(query, credential)),
    updatePayment: (id, payment, credential) => inner.updatePayment(id, payment, credential),
    noteTransactionUpdate(transaction) {
      forgetTransactionReads(inFlight, transaction.transactionId);
      inner.noteTransactionUpdate?.(transaction);
    },
    watchTransactionChanges: inner.watchTransactionChanges?.bind(inner),
    close: () => inner.close(),
  };
}
