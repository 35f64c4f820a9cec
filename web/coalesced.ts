/**
 * A task run at most once per `delayMs` however often it is asked for: a
 * burst of events costs one refetch, and a steady stream one per delay, not
 * none (a debounce that restarts on every event would starve). Asked while it
 * runs, it runs once more afterwards, so the last ask is never lost.
 */
export interface Coalesced {
  /** Runs the task within `delayMs`. */
  soon(): void;
  /** Runs the task now (or right after the run in progress). */
  now(): void;
  stop(): void;
}

export function coalesced(task: () => Promise<void>, delayMs: number): Coalesced {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let again = false;
  let stopped = false;

  async function run(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await task();
    } finally {
      running = false;
      if (again) {
        again = false;
        void run();
      }
    }
  }

  return {
    soon() {
      if (!stopped && timer === undefined) timer = setTimeout(() => void run(), delayMs);
    },
    now: () => void run(),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
