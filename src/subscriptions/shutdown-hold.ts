import { setTimeout as sleep } from 'node:timers/promises';

/*
 * A stopping gateway must not make a subscription look finished: graphql-ws
 * would send `complete` for it, and graphql-ws, Apollo Client and urql then
 * never resubscribe. Once holding, a subscription whose source ends (the
 * event bus ends each one after it delivered what it held) stays open,
 * waiting; the connection is then closed with a code clients retry, and
 * graphql-ws's close handling returns the iterator without a `complete`.
 */

export interface ShutdownHold {
  /** Subscriptions pass through this, so that their end can be held. */
  wrap<T>(result: AsyncIterable<T> | T): AsyncIterable<T> | T;
  /** From now on, an ending source leaves its subscription open and silent. */
  hold(): void;
  /** Resolves once every subscription open when holding began has seen its source end, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void>;
}

interface Entry {
  ended: boolean;
}

const isAsyncIterable = <T>(value: unknown): value is AsyncIterable<T> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

export function createShutdownHold(): ShutdownHold {
  const open = new Set<Entry>();
  let holding = false;
  let atHold: Entry[] = [];

  function wrap<T>(result: AsyncIterable<T> | T): AsyncIterable<T> | T {
    if (!isAsyncIterable<T>(result)) return result;
    const source = result[Symbol.asyncIterator]();
    const entry: Entry = { ended: false };
    open.add(entry);
    let returned = false;
    let release: ((result: IteratorResult<T>) => void) | undefined;
    const end = () => {
      entry.ended = true;
      open.delete(entry);
    };
    const iterator: AsyncIterableIterator<T> = {
      async next() {
        let next: IteratorResult<T>;
        try {
          next = await source.next();
        } catch (error) {
          end();
          throw error;
        }
        if (!next.done) return next;
        end();
        if (!holding || returned) return next;
        return new Promise<IteratorResult<T>>((resolve) => (release = resolve));
      },
      async return() {
        returned = true;
        end();
        release?.({ done: true, value: undefined });
        release = undefined;
        await source.return?.();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  return {
    wrap,
    hold() {
      holding = true;
      atHold = [...open];
    },
    async settled(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (atHold.some((entry) => !entry.ended) && Date.now() < deadline) await sleep(10);
    },
  };
}
