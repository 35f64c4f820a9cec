/*
 * Reads of an account's change marker (recent-pages.ts), shared by the reads waiting for one, never by a read that
 * began after it was sent. A check answers for a read only if its statement's snapshot is taken after the read began
 * (else it could miss an event committed just before the read), so a read never joins a check already sent: it
 * waits for the next one, which is sent once the one in flight is answered, and which every read arriving meanwhile
 * shares. Under load, one round trip then answers the reads of a whole round trip (each costs the database a
 * statement and the gateway a socket write and an answer to parse: about as much as the rest of a kept page's read);
 * alone, a read sends its own at once.
 */

interface Check {
  promise: Promise<string>;
  resolve: (marker: string) => void;
  reject: (error: unknown) => void;
}

function check(): Check {
  let resolve!: (marker: string) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<string>((ok, fail) => ((resolve = ok), (reject = fail)));
  return { promise, resolve, reject };
}

/** `read(account)` reads the marker now; the function returned resolves a marker read after it was called. */
export function sharedMarkerChecks(read: (account: string) => Promise<string>): (account: string) => Promise<string> {
  /** Per account: whether a check is in flight, and the next one, which the reads arriving meanwhile share. */
  const accounts = new Map<string, { next: Check | undefined }>();

  function send(account: string, state: { next: Check | undefined }, sent: Check): void {
    read(account).then(sent.resolve, sent.reject).finally(() => {
      const next = state.next;
      state.next = undefined;
      if (next) send(account, state, next);
      else accounts.delete(account);
    });
  }

  return (account) => {
    const state = accounts.get(account);
    if (!state) {
      const sent = check();
      const fresh = { next: undefined };
      accounts.set(account, fresh);
      send(account, fresh, sent);
      return sent.promise;
    }
    state.next ??= check();
    return state.next.promise;
  };
}
