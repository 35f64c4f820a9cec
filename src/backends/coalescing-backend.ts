import { refuse } from '../refusals/refusals.js';
import type { Backend, CallScope, Credential } from './backend.js';
import { ConnectedCaller, type Caller } from './caller.js';
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
  /** Set once a waiter that never leaves (no caller) joined: the call runs to its end. */
  pinned: boolean;
  /** The call's own caller, marked as left when its last waiter has left. */
  caller: ConnectedCaller | undefined;
}

/** `promise` as one waiter sees it: rejected as abandoned as soon as its own client leaves. */
function waitFor<T>(shared: Shared, caller: Caller | undefined): Promise<T> {
  if (!caller) {
    shared.pinned = true;
    return shared.promise as Promise<T>;
  }
  shared.waiting++;
  return new Promise<T>((resolve, reject) => {
    const forget = caller.onLeft(() => {
      reject(refuse.abandoned());
      if (--shared.waiting === 0 && !shared.pinned) shared.caller?.markLeft();
    });
    shared.promise.then(
      (value) => {
        forget();
        resolve(value as T);
      },
      (error: unknown) => {
        forget();
        reject(error);
      },
    );
  });
}

/**
 * What the map of calls in flight holds for one: a cell that lets go of the
 * call once it has settled, so that the long-lived map does not keep a
 * finished call's promises and answer alive until its next full collection
 * (docs/performance.md, "Cells that let go").
 */
interface InFlight {
  shared: Shared | undefined;
}

export function createCoalescingBackend(inner: Backend): Backend {
  const inFlight = new Map<string, InFlight>();

  function share<T>(
    kind: ReadKind,
    parts: Array<string | undefined>,
    credential: Credential,
    scope: CallScope | undefined,
    call: (scope: CallScope | undefined) => Promise<T>,
  ): Promise<T> {
    const key = readKey(kind, parts, credential);
    let shared = inFlight.get(key)?.shared;
    if (!shared) {
      const caller = scope?.caller ? new ConnectedCaller() : undefined;
      // Counted for the request that started it (its tally and budget); stopped when all its waiters left.
      const own: CallScope | undefined = caller &&
        scope && { id: scope.id, tally: scope.tally, upstreamBudget: scope.upstreamBudget, caller };
      const created: Shared = { promise: call(own ?? scope), waiting: 0, pinned: false, caller };
      const cell: InFlight = { shared: created };
      // Its waiters read the outcome; this branch only forgets the call (one reaction, not a finally and a catch).
      const forget = () => {
        if (inFlight.get(key) === cell) inFlight.delete(key);
        cell.shared = undefined;
      };
      created.promise.then(forget, forget);
      inFlight.set(key, cell);
      shared = created;
    }
    return waitFor<T>(shared, scope?.caller);
  }

  return {
    getTransaction: (id, credential, scope) =>
      share('transaction', [id], credential, scope, (own) => inner.getTransaction(id, credential, own)),
    getVending: (id, query, credential, scope) =>
      share('vending', [id, query.products], credential, scope, (own) => inner.getVending(id, query, credential, own)),
    listVendings: (query, credential, scope) =>
      share('vendings', [query.products], credential, scope, (own) => inner.listVendings(query, credential, own)),
    updatePayment: (id, payment, credential, scope) => inner.updatePayment(id, payment, credential, scope),
    noteTransactionUpdate(transaction, at, account) {
      forgetTransactionReads(inFlight, transaction.transactionId);
      inner.noteTransactionUpdate?.(transaction, at, account);
    },
    watchTransactionChanges: inner.watchTransactionChanges?.bind(inner),
    close: () => inner.close(),
  };
}
