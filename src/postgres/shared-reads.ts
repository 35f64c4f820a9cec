/*
 * Reads of the database shared by the callers waiting for one, never by a caller that came after it was sent
 * (recent-pages.ts: an account's change marker, a page read again after a change). A read answers a caller only if
 * its statement's snapshot is taken after the caller began (else it could miss an event committed just before), so
 * a caller never joins a read already sent: it waits for the next one, sent once the one in flight is answered, and
 * shared by every caller of the same key arriving meanwhile. Under load one round trip then answers the callers of
 * a whole round trip (each read costs the database a statement and the gateway a socket write and an answer to
 * parse: for a marker, about as much as the rest of a kept page's read); alone, a caller sends its own at once.
 * (Holding the first read to the end of the event loop's turn, for the callers of that turn to share it, cost about
 * 70 µs of CPU per read of a kept page more than it saved, measured at 300,000 transactions.)
 */

interface Waiting<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function waiting<T>(): Waiting<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((ok, fail) => ((resolve = ok), (reject = fail)));
  return { promise, resolve, reject };
}

/**
 * `read(argument)` reads now; the function returned resolves what a read sent after it was called gave. Arguments
 * of one key must be alike (the key says everything the read depends on): a read is sent with its first caller's.
 */
export function sharedReads<A, T>(keyOf: (argument: A) => string, read: (argument: A) => Promise<T>): (argument: A) => Promise<T> {
  /** Per key, while a read is in flight: the next one, which the callers arriving meanwhile share, with its argument. */
  const inFlight = new Map<string, { next: { argument: A; waiting: Waiting<T> } | undefined }>();

  function send(key: string, state: { next: { argument: A; waiting: Waiting<T> } | undefined }, argument: A, sent: Waiting<T>): void {
    read(argument)
      .then(sent.resolve, sent.reject)
      .finally(() => {
        const next = state.next;
        state.next = undefined;
        if (next) send(key, state, next.argument, next.waiting);
        else inFlight.delete(key);
      });
  }

  return (argument) => {
    const key = keyOf(argument);
    const state = inFlight.get(key);
    if (!state) {
      const sent = waiting<T>();
      const fresh = { next: undefined };
      inFlight.set(key, fresh);
      send(key, fresh, argument, sent);
      return sent.promise;
    }
    state.next ??= { argument, waiting: waiting<T>() };
    return state.next.waiting.promise;
  };
}
