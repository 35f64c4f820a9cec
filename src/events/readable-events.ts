/*
 * A subscriber's events, less those it may not receive. The judge may ask the
 * service (forward mode), so it is awaited, one event at a time: the events
 * that pass keep their order. Ending the stream ends its source at once, even
 * while an event waits for its verdict.
 */

export function readableEvents<T>(
  source: AsyncIterableIterator<T>,
  mayReceive: (item: T) => boolean | Promise<boolean>,
): AsyncIterableIterator<T> {
  const iterator: AsyncIterableIterator<T> = {
    async next() {
      for (;;) {
        const next = await source.next();
        if (next.done || (await mayReceive(next.value))) return next;
      }
    },
    async return() {
      await source.return?.();
      return { done: true, value: undefined };
    },
    async throw(error) {
      await source.return?.();
      throw error;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}
