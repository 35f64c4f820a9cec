/*
 * Who a request's work is for, and whether they are still there. Plain
 * callbacks rather than an AbortSignal: every read of every request consults
 * it, and an EventTarget listener is dearer (docs/performance.md); an
 * AbortSignal is made only where a library needs one (an upstream call).
 */

/** Tells when the client a request's work is for went away. */
export interface Owner {
  /** True once the client went away. */
  readonly gone: boolean;
  /** Calls `listener` once when the client goes away; returns the function that forgets it. */
  onGone(listener: () => void): () => void;
}

/** An owner the transport tells (`leave()`) when its client's connection closed before the answer. */
export class ClientOwner implements Owner {
  gone = false;
  #listeners: Set<() => void> | undefined;

  onGone(listener: () => void): () => void {
    if (this.gone) {
      listener();
      return () => {};
    }
    (this.#listeners ??= new Set()).add(listener);
    return () => void this.#listeners?.delete(listener);
  }

  leave(): void {
    if (this.gone) return;
    this.gone = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }
}
