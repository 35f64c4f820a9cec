import { setTimeout as sleep } from 'node:timers/promises';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import type { Logger } from '../logging/logger.js';

/*
 * Feeds a store whose apply is a round trip (PostgreSQL) with the events this
 * instance's log admitted, when that store is where the deployment keeps its
 * events (DATABASE_URL without Redis): each webhook waits for its event's
 * commit, so its 200 means the event is in the database. Events that wait
 * together are committed together (up to BATCH, one database transaction,
 * so a burst costs a round trip per batch, not per event), in the order
 * admitted. When the store fails, the events of that batch are refused (their
 * webhooks get 503; the sender retries), and so is every event pushed within
 * `retryMs` of the failure, without a try: an outage answers at once instead
 * of holding each webhook for the database's timeout. Applying is idempotent
 * (an event id a record holds changes nothing), so a retry of an event whose
 * commit succeeded but whose answer was lost is harmless.
 */

export interface HistoryFeedOptions {
  /**
   * Applies events in the order given, all or none; may resolve, per event, what the store said of it: false when
   * it held it already, else its position.
   */
  apply(events: readonly TransactionUpdateEvent[]): Promise<ReadonlyArray<number | false> | void>;
  /** Whether an error may pass when tried again (else the event is logged and skipped). */
  transient(error: unknown): boolean;
  logger: Logger;
  /** After a failure, how long events are refused without a try (ms). */
  retryMs: number;
  /**
   * Events waiting for their commit: once this many wait, `full()` says so and
   * the webhook route answers 503 (the sender retries) before admitting more.
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

/**
 * What became of one event of a batch applied: its position in the store (true when the store gives none), false when
 * the store held it already, or `skipped`: the store refused it for good (logged).
 */
export type EventOutcome = number | boolean | 'skipped';

/** What became of a batch: each event's outcome, in order, or `retry` for the whole batch (the store is away). */
export type BatchOutcome = 'retry' | EventOutcome[];

/** Events applied in one database transaction at most, by either feed. */
export const BATCH = 100;
/** Longest a batch waits for the senders the last commit answered (ms). */
const GATHER_MS = 2;

/**
 * Applies a batch of events and says what became of it; an outage is logged
 * once when it starts and once when it ends, not once per try. A batch the
 * store refuses for good is applied again one event at a time, so that only
 * the event it cannot take is skipped. Both feeds (this module's and Redis's
 * queue) apply through one of these; `waiting` ends the outage's log line: what
 * becomes of the events meanwhile.
 */
export function createOutageAwareApply(
  options: Pick<HistoryFeedOptions, 'apply' | 'transient' | 'logger'>,
  waiting: string,
): (events: readonly TransactionUpdateEvent[], pending?: number) => Promise<BatchOutcome> {
  let failing = false;
  const attempt = async (events: readonly TransactionUpdateEvent[], pending: number | undefined): Promise<BatchOutcome> => {
    try {
      const said = await options.apply(events);
      if (failing) options.logger.info('the history applies events again');
      failing = false;
      return events.map((_, index) => said?.[index] ?? true);
    } catch (error) {
      if (options.transient(error)) {
        if (!failing) options.logger.warn({ err: error, pending }, `the history cannot apply events now; ${waiting}`);
        failing = true;
        return 'retry';
      }
      if (events.length === 1) {
        options.logger.error({ err: error, eventId: events[0]!.eventId }, 'an event could not be applied to the history');
        return ['skipped'];
      }
      const outcomes: EventOutcome[] = [];
      for (const event of events) {
        const alone = await attempt([event], pending);
        if (alone === 'retry') return 'retry';
        outcomes.push(...alone);
      }
      return outcomes;
    }
  };
  return attempt;
}

/** Why an event pushed to the feed was not kept: its webhook is answered 503. */
export class NotKept extends Error {}

interface Waiting {
  event: TransactionUpdateEvent;
  /**
   * What the store said of the event: false when it already held it (a redelivery of one kept before this process
   * started), its position when it gives one, else true.
   */
  kept(outcome: boolean | number): void;
  refused(error: Error): void;
}

export function createHistoryFeed(
  options: HistoryFeedOptions,
): HistoryFeed & { push(event: TransactionUpdateEvent): Promise<boolean | number> } {
  const queue: Waiting[] = [];
  let running: Promise<void> | undefined;
  let closed = false;
  /** When the last try failed; 0 once one succeeded. */
  let failedAt = 0;
  const applyBatch = createOutageAwareApply(options, 'their webhooks are answered 503 until it can');

  /** How many events the last batch held: the webhooks it answered may send more at once. */
  let lastBatch = 0;
  /** Resolved by a push once as many events wait as the last batch held. */
  let gathered: (() => void) | undefined;

  /**
   * Before a batch much smaller than the last one, waits a moment (at most GATHER_MS) for the senders the
   * last commit answered: under a steady load they come back together, and a commit taken for the first
   * of them alone would cost as much as one for all of them, halving what the feed applies.
   */
  async function gather(): Promise<void> {
    if (queue.length * 2 > lastBatch || queue.length >= BATCH) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, GATHER_MS);
      function done() {
        clearTimeout(timer);
        gathered = undefined;
        resolve();
      }
      gathered = done;
    });
  }

  async function run(): Promise<void> {
    while (queue.length > 0 && !closed) {
      await gather();
      const batch = queue.splice(0, BATCH);
      lastBatch = batch.length;
      const outcome = await applyBatch(
        batch.map(({ event }) => event),
        queue.length,
      );
      failedAt = outcome === 'retry' ? Date.now() : 0;
      batch.forEach((waiting, index) => {
        const kept = outcome === 'retry' ? undefined : outcome[index]!;
        if (kept === undefined) waiting.refused(new NotKept('the history cannot store events now'));
        else if (kept === 'skipped') waiting.refused(new NotKept('the history refused the event'));
        else waiting.kept(kept);
      });
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
      if (closed) return Promise.reject(new NotKept('the history is closing'));
      if (failedAt > 0 && Date.now() - failedAt < options.retryMs)
        return Promise.reject(new NotKept('the history could not store events a moment ago'));
      return new Promise<boolean | number>((kept, refused) => {
        queue.push({ event, kept, refused });
        if (gathered && queue.length >= Math.min(lastBatch, BATCH)) gathered();
        start();
      });
    },
    pending: async () => queue.length,
    full: () => queue.length >= options.maxQueued,
    feeding: () => failedAt === 0,
    async close(timeoutMs) {
      const deadline = sleep(timeoutMs, undefined, { ref: false });
      await Promise.race([
        (async () => {
          while (running) await running;
        })(),
        deadline,
      ]);
      closed = true;
      for (const waiting of queue.splice(0)) waiting.refused(new NotKept('the history is closing'));
    },
  };
}
