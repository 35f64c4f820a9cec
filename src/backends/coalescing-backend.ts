import { abandoned } from '../errors.js';
import type { Backend, CallScope, Credential } from './backend.js';
import { forgetTransactionReads, readKey, type ReadKind } from './read-keys.js';

/*
 * Concurrent identical reads share one call: the first asks the backend, the
 * others wait for its answer. The key holds the client's credential, so
 * clients with different keys never share an answer. A webhook about a
 * transaction detaches the reads of it in flight, so no read that joins after
 * the event gets the state from before it.
 *
 * A shared call belongs to everyone waiting for it: a client that leaves
 * stops waiting at once, and the call itself is aborted only when the last
 * waiter has left (work that belongs to no request never leaves).
 */

interface Shared {
  promise: Promise<unknown>;
  /** Waiters that may still leave. */
  waiting: number;
  /** Set once a waiter that never leaves (no signal) joined: the call runs to its end. */
  pinned: boolean;
  owner: AbortController | undefined;
}

/** `promise` as one waiter sees it: rejected as abandoned as soon as its own signal aborts. */
function waitFor<T>(shared: Shared, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) {
    shared.pinned = true;
    return shared.promise as Promise<T>;
  }
  shared.waiting++;
  return new Promise<T>((resolve, reject) => {
    const leave = () => {
      reject(abandoned());
      if (--shared.waiting === 0 && !shared.pinned) shared.owner?.abort(signal.reason);
    };
    if (signal.aborted) return leave();
    signal.addEventListener('abort', leave, { once: true });
    shared.promise.then(
      (value) => {
        signal.removeEventListener('abort', leave);
        resolve(value as T);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', leave);
        reject(error);
      },
    );
  });
}

export function createCoalescingBackend(inner: Backend): Backend {
  const inFlight = new Map<string, Shared>();

  function share<T>(kind: ReadKind, parts: Array<string | undefined>, credential: Credential, scope: CallScope | undefined, call: (scope: CallScope | undefined) => Promise<T>): Promise<T> {
    const key = readKey(kind, parts, credential);
    let shared = inFlight.get(key);
    if (!shared) {
      const owner = scope?.signal ? new AbortController() : undefined;
      // The call is counted for the request that started it, and aborted by the signal of all its waiters.
      const created: Shared = { promise: call(owner ? { ...scope, signal: owner.signal } as CallScope : scope), waiting: 0, pinned: false, owner };
      created.promise = created.promise.finally(() => {
        if (inFlight.get(key) === created) inFlight.delete(key);
      });
      // Its waiters read the outcome; this copy is only for `finally`.
      created.promise.catch(() => undefined);
      inFlight.set(key, created);
      shared = created;
    }
    return waitFor<T>(shared, scope?.signal);
  }

  return {
    getTransaction: (id, credential, scope) => share('transaction', [id], credential, scope, (own) => inner.getTransaction(id, credential, own)),
    getVending: (id, query, credential, scope) => share('vending', [id, query.products], credential, scope, (own) => inner.getVending(id, query, credential, own)),
    listVendings: (query, credential, scope) => share('vendings', [query.products], credential, scope, (own) => inner.listVendings(query, credential, own)),
    updatePayment: (id, payment, credential, scope) => inner.updatePayment(id, payment, credential, scope),
    noteTransactionUpdate(transaction) {
      forgetTransactionReads(inFlight, transaction.transactionId);
      inner.noteTransactionUpdate?.(transaction);
    },
    watchTransactionChanges: inner.watchTransactionChanges?.bind(inner),
    close: () => inner.close(),
  };
}
