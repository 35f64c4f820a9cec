/*
 * Who a request's work is for, and whether they are still there. Plain
 * callbacks rather than an AbortSignal: every read of every request consults
 * it, and an EventTarget listener is dearer (docs/performance.md); an
 * AbortSignal is made only where a library needs one (an upstream call).
 */

/** Tells when the client a request's work is for went away. */
export interface Caller {
  /** True once the client went away. */
  readonly left: boolean;
  /** Calls `listener` once when the client goes away; returns the function that forgets it. */
  onLeft(listener: () => void): () => void;
}

/** A caller the transport marks as left (`markLeft()`) when its connection closed before the answer. */
export class ConnectedCaller implements Caller {
  left = false;
  #listeners: Set<() => void> | undefined;

  onLeft(listener: () => void): () => void {
    if (this.left) {
      listener();
      return () => {};
    }
    (this.#listeners ??= new Set()).add(listener);
    return () => void this.#listeners?.delete(listener);
  }

  markLeft(): void {
    if (this.left) return;
    this.left = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }
}
