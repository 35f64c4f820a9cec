import { ClientGone } from '../../errors.js';
import { refuse } from '../../refusals/refusals.js';
import type { Caller } from '../caller.js';

/*
 * A bound on upstream requests under way at once, with a bounded FIFO queue
 * behind it. The Pool's `connections` bounds sockets, but requests queued for a
 * socket have no bound; under a slow upstream they would pile up in memory and
 * all time out together. Here the excess is refused at once instead.
 */

/** Both from the configuration (UPSTREAM_MAX_CONCURRENT), where their defaults are. */
export interface ConcurrencyLimitOptions {
  /** Most `run` calls whose work is under way at once. */
  maxConcurrent: number;
  /** Most calls waiting for a slot; one more is refused with UPSTREAM_UNAVAILABLE. */
  maxQueued: number;
}

export interface ConcurrencyLimit {
  /**
   * Runs `work` when a slot is free, in arrival order. A waiter whose
   * `caller` has left is taken out of the queue (throwing `ClientGone`); one still
   * waiting after `maxWaitMs` leaves it with UPSTREAM_TIMEOUT.
   */
  run<T>(work: () => Promise<T>, caller?: Caller, maxWaitMs?: number): Promise<T>;
  /** Calls whose work is under way. */
  readonly inFlight: number;
  /** Calls waiting for a slot. */
  readonly queued: number;
}

export function createConcurrencyLimit({ maxConcurrent, maxQueued }: ConcurrencyLimitOptions): ConcurrencyLimit {
  if (!(maxConcurrent >= 1)) throw new RangeError(`maxConcurrent must be at least 1, not ${maxConcurrent}`);
  if (!(maxQueued >= 0)) throw new RangeError(`maxQueued must be at least 0, not ${maxQueued}`);

  let inFlight = 0;
  const waiting: Array<() => void> = [];

  // Only a call that has to wait pays for a timer and a listener.
  function wait(caller: Caller | undefined, maxWaitMs: number | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!caller && maxWaitMs === undefined) return void waiting.push(resolve);
      let timer: NodeJS.Timeout | undefined;
      let forget = () => {};
      const admit = () => {
        clearTimeout(timer);
        forget();
        resolve();
      };
      const leave = (reason: unknown) => {
        const index = waiting.indexOf(admit);
        if (index >= 0) waiting.splice(index, 1);
        clearTimeout(timer);
        forget();
        reject(reason);
      };
      waiting.push(admit);
      if (maxWaitMs !== undefined) timer = setTimeout(() => leave(refuse.upstreamConnectionsBusy(maxWaitMs)), maxWaitMs);
      if (caller) forget = caller.onLeft(() => leave(new ClientGone()));
    });
  }

  // A finished call hands its slot straight to the oldest waiter, so a call
  // arriving in between can never overtake the queue.
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else inFlight--;
  };

  return {
    async run<T>(work: () => Promise<T>, caller?: Caller, maxWaitMs?: number): Promise<T> {
      if (caller?.left) throw new ClientGone();
      if (inFlight < maxConcurrent) {
        inFlight++;
      } else if (waiting.length < maxQueued) {
        await wait(caller, maxWaitMs);
      } else {
        throw refuse.upstreamQueueFull();
      }
      try {
        return await work();
      } finally {
        release();
      }
    },
    get inFlight() {
      return inFlight;
    },
    get queued() {
      return waiting.length;
    },
  };
}
