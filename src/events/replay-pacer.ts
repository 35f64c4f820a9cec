/*
 * Replays share the instance: a restarted instance may have hundreds of
 * subscribers resuming at once, each reading the log page by page. Reading
 * (and parsing) every page at once would fill the event loop, and probes,
 * webhooks and live events would wait behind all of it. The pacer lets a few
 * page reads run at a time, first come first served, and yields to the event
 * loop after each, so whatever else is waiting goes between two pages.
 */

export interface ReplayPacer {
  /** Runs `read` once a slot is free; the slot is given on after the event loop had a turn. */
  run<T>(read: () => Promise<T>): Promise<T>;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export function createReplayPacer(atOnce: number): ReplayPacer {
  let running = 0;
  const waiting: Array<() => void> = [];
  return {
    async run(read) {
      if (running >= atOnce) await new Promise<void>((resolve) => waiting.push(resolve));
      else running += 1;
      try {
        return await read();
      } finally {
        await nextTurn();
        // The slot passes straight to the next waiter, so a newcomer cannot overtake it.
        const next = waiting.shift();
        if (next) next();
        else running -= 1;
      }
    },
  };
}
