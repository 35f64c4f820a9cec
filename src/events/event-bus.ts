import { setTimeout as sleep } from 'node:timers/promises';
import { accountOf } from '../contract/contract.js';
import { comparePositions, isEventsExpired, type DedupeBy, type EventLog, type LoggedEvent, type ReplayPage } from './event-log.js';
import { createReplayPacer } from './replay-pacer.js';
import { refuseOperation } from '../refusals/operation-refusals.js';
import type { TransactionUpdateEvent } from './normalize.js';
import { backoffDelay } from '../timing/backoff.js';

/*
 * The event bus between webhooks and subscriptions, over an event log that is
 * in-process or in Redis: resolvers see only this interface.
 * A subscriber may resume after the last event it saw: it gets the logged
 * events after that one, then live ones, with no gap and no repeat at the seam.
 */

export interface SubscribeOptions {
  /** Only events of this transaction. */
  transactionId?: string | null | undefined;
  /** The last position (or `eventId`) the subscriber saw: replay what came after it first. */
  after?: string | null | undefined;
  /**
   * Only events of this account (`DEFAULT_ACCOUNT`: those of `POST /webhooks`),
   * and an `eventId` in `after` is this account's; undefined: every account's
   * events, and `after` names an event id of the default account.
   */
  account?: string | undefined;
  /** The account whose event id `after` names, when `account` is not given (a subscriber that may read several). */
  afterAccount?: string | undefined;
}

export interface EventBus {
  /**
   * Resolves `true` once the event is in the log (so it will reach every
   * subscriber), `false` when it is a redelivery (see `DedupeBy`); rejects
   * when the log is unreachable.
   */
  publish(event: TransactionUpdateEvent, dedupeBy?: DedupeBy): Promise<boolean>;
  /** Each event with its position in the log. Rejects with `EVENTS_EXPIRED` when `after` is beyond the log's reach. */
  subscribe(options?: SubscribeOptions): Promise<AsyncIterableIterator<LoggedEvent>>;
  /** Calls `listener` with every event published on any instance. */
  onEvent(listener: (event: TransactionUpdateEvent) => void): () => void;
  /** Subscriptions open right now. */
  activeSubscriptions(): number;
  /** Whether publishing can succeed now. */
  ready(): boolean;
  /** Ends every subscription once it has delivered what it already holds. */
  close(): Promise<void>;
}

export interface EventBusOptions {
  /** Where events are kept for resuming: in process (event-log.ts) or in Redis. */
  log: EventLog;
  /** Events held for one subscriber that reads too slowly before it is ended. @default 10000 */
  maxQueuedPerSubscriber?: number;
  /** Pages of replays read at once (replay-pacer.ts). @default 8 */
  pagesAtOnce?: number;
}

/**
 * A replay the log cannot serve now is asked again after this long, doubling up to `RETRY_MOST_MS` (plus up to half again, so hundreds
 * waiting do not ask together).
 */
const RETRY_FIRST_MS = 100;
const RETRY_MOST_MS = 2_000;
/** Events a subscriber takes from what is already there before the event loop gets a turn. */
const TAKEN_PER_TURN = 50;
const retryDelay = (attempt: number) => backoffDelay(attempt + 1, { firstMs: RETRY_FIRST_MS, mostMs: RETRY_MOST_MS, jitter: 0.5 });

export function createEventBus(options: EventBusOptions): EventBus {
  const { log } = options;
  const maxQueued = options.maxQueuedPerSubscriber ?? 10_000;
  const pacer = createReplayPacer(options.pagesAtOnce ?? 8);
  const streams = new Set<{ end(error?: Error): void; finish(): void }>();

  async function subscribe({ transactionId, after, account, afterAccount }: SubscribeOptions = {}): Promise<
    AsyncIterableIterator<LoggedEvent>
  > {
    /** Live events, in log order; while a replay is under way, those it has not reached yet. */
    const queue: LoggedEvent[] = [];
    /** The replay's page being taken. */
    const replayed: LoggedEvent[] = [];
    /** Where the replay's next page starts; undefined once it reached the newest event (or there is none). */
    let replayFrom: string | undefined = after || undefined;
    let reading = false;
    /** Set when the subscription is finished during its replay: live events come after a gap, and never go out. */
    let liveCut = false;
    let waiting: { resolve(result: IteratorResult<LoggedEvent>): void; reject(error: Error): void } | undefined;
    let failure: Error | undefined;
    let done = false;
    let finishing = false;
    let last: string | undefined;
    /** Events taken without waiting, since the subscriber last had to wait. */
    let inARow = 0;
    const ofAccount = (logged: LoggedEvent) => account === undefined || accountOf(logged.event) === account;

    /**
     * The replay's page after `from`. A subscriber of one account that the log no longer reaches is told its account's cursor
     * (EventLog.accountCursor), never the log's: positions are shared, and the log's newest would tell it when any account last
     * received an event. From that cursor it resumes live, even once the log dropped the event there: nothing of its account
     * came after it. A subscriber of several accounts (forward mode, the service judging each event) keeps the log's answer.
     */
    async function readFrom(from: string): Promise<ReplayPage> {
      try {
        return await log.readAfter(from, account ?? afterAccount);
      } catch (error) {
        if (account === undefined || !isEventsExpired(error)) throw error;
        const own = await log.accountCursor(account);
        if (from === own) return { events: [], next: undefined };
        throw refuseOperation.eventsExpired(from, own);
      }
    }

    // Listen before reading the log, so nothing published meanwhile is missed;
    // positions then drop what both the replay and the live feed carry.
    const unlisten = log.onAppend((logged) => {
      // Another account's events are never queued (nor replayed, below): they would count against this subscriber's bound.
      if (done || !ofAccount(logged)) return;
      queue.push(logged);
      if (queue.length > maxQueued) stream.end(new Error('Subscriber fell too far behind; resubscribe with `after`'));
      else flush();
    });

    function take(): LoggedEvent | undefined {
      // Live events wait for the replay: they come after everything it has still to read.
      const source = replayed.length > 0 || replayFrom !== undefined || liveCut ? replayed : queue;
      while (source.length > 0) {
        const logged = source.shift() as LoggedEvent;
        if (last !== undefined && comparePositions(logged.position, last) <= 0) continue;
        last = logged.position;
        if (!transactionId || logged.event.transactionId === transactionId) return logged;
      }
      if (source === queue || liveCut) return undefined;
      if (replayFrom !== undefined) void readPage();
      else return take();
      return undefined;
    }

    /**
     * Puts a page of the replay in line; the first page is read before subscribe resolves (so EVENTS_EXPIRED refuses the subscription), the
     * others as the subscriber takes them.
     */
    function accept(page: ReplayPage): void {
      replayed.push(...(account === undefined ? page.events : page.events.filter(ofAccount)));
      replayFrom = finishing ? undefined : page.next;
    }

    /**
     * Reads the replay's next page. A read the log cannot serve now (Redis
     * away, a command timed out) ends nothing: it is asked again, for as long
     * as the subscription lasts, and the gap is filled once the log answers.
     * Only a position the log no longer reaches ends the subscription, with
     * EVENTS_EXPIRED, as it would have refused it at the start.
     */
    async function readPage(): Promise<void> {
      if (reading) return;
      reading = true;
      try {
        for (let attempt = 0; replayFrom !== undefined && !done && !finishing; attempt++) {
          const from = replayFrom;
          try {
            accept(await pacer.run(() => readFrom(from)));
            break;
          } catch (error) {
            if (isEventsExpired(error)) return stream.end(error as Error);
            await sleep(retryDelay(attempt));
          }
        }
      } finally {
        reading = false;
      }
      flush();
    }

    function flush(): void {
      if (!waiting) return;
      const event = take();
      if (event === undefined) {
        if (finishing && !reading) stream.end();
        return;
      }
      const { resolve } = waiting;
      waiting = undefined;
      resolve({ done: false, value: event });
    }

    const stream = {
      end(error?: Error) {
        if (done) return;
        done = true;
        failure = error;
        unlisten();
        streams.delete(stream);
        queue.length = 0;
        replayed.length = 0;
        const waiter = waiting;
        waiting = undefined;
        // A subscriber waiting for its next event is told why it ended (it would else take the end for a completion).
        if (waiter && error) {
          failure = undefined;
          waiter.reject(error);
        } else waiter?.resolve({ done: true, value: undefined });
      },
      /** Ends once every event already queued has been taken; a replay under way stops where it is, so nothing after its gap goes out. */
      finish() {
        finishing = true;
        if (replayFrom !== undefined) {
          replayFrom = undefined;
          liveCut = true;
          queue.length = 0;
        }
        if (waiting) flush();
        if (replayed.length === 0 && queue.length === 0) stream.end();
      },
    };

    if (replayFrom !== undefined) {
      try {
        accept(await pacer.run(() => readFrom(replayFrom!)));
      } catch (error) {
        // Not reached any more: refused now. Not readable now: the subscription starts, and its
        // replay is read (readPage) once it can be, as its subscriber asks for events.
        if (isEventsExpired(error)) {
          unlisten();
          throw error;
        }
      }
    }
    streams.add(stream);

    const iterator: AsyncIterableIterator<LoggedEvent> = {
      next() {
        if (failure) return Promise.reject(failure);
        if (done) return Promise.resolve({ done: true, value: undefined });
        const event = take();
        if (event !== undefined) {
          // A backlog (a replay's page) is taken in turns: each event answered at once would run them all before any I/O.
          if (++inARow % TAKEN_PER_TURN !== 0) return Promise.resolve({ done: false, value: event });
          return new Promise((resolve) => setImmediate(resolve, { done: false, value: event }));
        }
        inARow = 0;
        if (finishing) {
          stream.end();
          return Promise.resolve({ done: true, value: undefined });
        }
        return new Promise((resolve, reject) => (waiting = { resolve, reject }));
      },
      async return() {
        stream.end();
        return { done: true, value: undefined };
      },
      async throw(error) {
        stream.end();
        throw error;
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  return {
    async publish(event, dedupeBy = 'id') {
      return (await log.append(event, dedupeBy)) !== undefined;
    },
    subscribe,
    onEvent: (listener) => log.onAppend((logged) => listener(logged.event)),
    activeSubscriptions: () => streams.size,
    ready: () => log.ready(),
    async close() {
      // Events appended a moment ago may still be on their way to the listeners.
      await new Promise((resolve) => setImmediate(resolve));
      for (const stream of [...streams]) stream.finish();
      await log.close();
    },
  };
}
