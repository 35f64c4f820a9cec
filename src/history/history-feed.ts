import type { TransactionUpdateEvent } from '../events/normalize.js';
import type { Logger } from '../logging/logger.js';

/*
 * Feeds a store whose apply is a round trip (PostgreSQL) with the events this
 * instance's log admitted: in the order admitted, as many at a time as wait
 * (up to BATCH, one database transaction each, so a backlog is applied at the
 * database's pace and not at a round trip's per event), off the webhook's
 * path (its 200 does not wait for the database). While the store
 * fails with a transient error (the database away), the event waits and is
 * tried again, with the events behind it: applying is idempotent (an event id
 * a record holds changes nothing), so trying again after an answer that got
 * lost is harmless.
 */

export interface HistoryFeedOptions {
  /** Applies events in the order given, all or none. */
  apply(events: readonly TransactionUpdateEvent[]): Promise<void>;
  /** Whether an error may pass when tried again (else the event is logged and skipped). */
  transient(error: unknown): boolean;
  logger: Logger;
  /** Wait before trying again (ms). */
  retryMs: number;
  /**
   * Events held while the store is away or slower than the webhooks: once it
   * holds this many, `full()` says so and the webhook route answers 503
   * (the sender retries), so an acknowledged event is never dropped.
   */
  maxQueued: number;
}

/** What feeds a history whose apply is a round trip: this module's in-process queue, or Redis's (src/redis/). */
export interface HistoryFeed {
  /** Events admitted (by any instance, for a shared queue) and not applied yet. */
  pending(): Promise<number>;
  /** True while it holds as many events as it may: new ones are to be refused before they are admitted. */
  full(): boolean;
  /** False while events cannot reach the history (the store or the queue failed last time; tried again). */
  feeding(): boolean;
  /** Resolves once everything pushed so far is applied, or after `timeoutMs`; stops the feed. */
  close(timeoutMs: number): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** What became of a batch of events: applied, to be tried again (the store is away), or applied but for those skipped (logged). */
export type ApplyOutcome = 'applied' | 'retry' | 'skipped';

/** Events applied in one database transaction at most, by either feed. */
export const BATCH = 100;

/**
 * Applies a batch of events and says what became of it; an outage is logged
 * once when it starts and once when it ends, not once per try. A batch the
 * store refuses for good is applied again one event at a time, so that only
 * the event it cannot take is skipped. Both feeds (this module's and Redis's
 * queue) apply through one of these.
 */
export function createOutageAwareApply(
  options: Pick<HistoryFeedOptions, 'apply' | 'transient' | 'logger'>,
  waiting: string,
): (events: readonly TransactionUpdateEvent[], pending?: number) => Promise<ApplyOutcome> {
  let failing = false;
  const attempt = async (events: readonly TransactionUpdateEvent[], pending: number | undefined): Promise<ApplyOutcome> => {
    try {
      await options.apply(events);
      if (failing) options.logger.info('the history applies events again');
      failing = false;
      return 'applied';
    } catch (error) {
      if (options.transient(error)) {
        if (!failing)
          options.logger.warn({ err: error, pending }, `the history cannot apply events now; they wait ${waiting} and are tried again`);
        failing = true;
        return 'retry';
      }
      if (events.length === 1) {
        options.logger.error({ err: error, eventId: events[0]!.eventId }, 'an event could not be applied to the history');
        return 'skipped';
      }
      for (const event of events) if ((await attempt([event], pending)) === 'retry') return 'retry';
      return 'skipped';
    }
  };
  return attempt;
}

export function createHistoryFeed(options: HistoryFeedOptions): HistoryFeed & { push(event: TransactionUpdateEvent): void } {
  const queue: TransactionUpdateEvent[] = [];
  let running: Promise<void> | undefined;
  let closed = false;
  let failing = false;
  const applyBatch = createOutageAwareApply(options, 'in this instance');

  async function run(): Promise<void> {
    while (queue.length > 0 && !closed) {
      const batch = queue.slice(0, BATCH);
      failing = (await applyBatch(batch, queue.length)) === 'retry';
      if (failing) {
        await sleep(options.retryMs);
        continue;
      }
      queue.splice(0, batch.length);
    }
  }

  function start(): void {
    running ??= run().finally(() => {
      running = undefined;
      if (queue.length > 0 && !closed) start();
    });
  }

  return {
    push(event) {
      if (closed) return;
      // Kept even past the bound (webhooks admitted while `full()` was being read): an admitted event is never dropped.
      queue.push(event);
      start();
    },
    pending: async () => queue.length,
    full: () => queue.length >= options.maxQueued,
    feeding: () => !failing,
    async close(timeoutMs) {
      const deadline = sleep(timeoutMs);
      await Promise.race([
        (async () => {
          while (running && queue.length > 0) await running;
        })(),
        deadline,
      ]);
      closed = true;
    },
  };
}
