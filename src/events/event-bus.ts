import { accountOf, DEFAULT_ACCOUNT } from '../contract/index.js';
import { comparePositions, type DedupeBy, type EventLog, type LoggedEvent } from './event-log.js';
import type { TransactionUpdateEvent } from './normalize.js';

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
}

export function createEventBus(options: EventBusOptions): EventBus {
  const { log } = options;
  const maxQueued = options.maxQueuedPerSubscriber ?? 10_000;
  const streams = new Set<{ end(error?: Error): void; finish(): void }>();

  async function subscribe({ transactionId, after, account, afterAccount }: SubscribeOptions = {}): Promise<AsyncIterableIterator<LoggedEvent>> {
    const queue: LoggedEvent[] = [];
    let waiting: ((result: IteratorResult<LoggedEvent>) => void) | undefined;
    let failure: Error | undefined;
    let done = false;
    let finishing = false;
    let last: string | undefined;
    const ofAccount = (logged: LoggedEvent) => account === undefined || accountOf(logged.event) === account;

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
      while (queue.length > 0) {
        const logged = queue.shift() as LoggedEvent;
        if (last !== undefined && comparePositions(logged.position, last) <= 0) continue;
        last = logged.position;
        if (!transactionId || logged.event.transactionId === transactionId) return logged;
      }
      return undefined;
    }

    function flush(): void {
      if (!waiting) return;
      const event = take();
      if (event === undefined) {
        if (finishing) stream.end();
        return;
      }
      const resolve = waiting;
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
        waiting?.({ done: true, value: undefined });
        waiting = undefined;
      },
      /** Ends once every event already queued has been taken. */
      finish() {
        finishing = true;
        if (queue.length === 0 || waiting) flush();
        if (queue.length === 0) stream.end();
      },
    };

    if (after) {
      try {
        const replay = await log.readAfter(after, account ?? afterAccount);
        queue.push(...(account === undefined ? replay : replay.filter(ofAccount)));
      } catch (error) {
        unlisten();
        throw error;
      }
      // Live events that arrived during the read sort after the replay.
      queue.sort((a, b) => comparePositions(a.position, b.position));
    }
    streams.add(stream);

    const iterator: AsyncIterableIterator<LoggedEvent> = {
      next() {
        if (failure) return Promise.reject(failure);
        if (done) return Promise.resolve({ done: true, value: undefined });
        const event = take();
        if (event !== undefined) return Promise.resolve({ done: false, value: event });
        if (finishing) {
          stream.end();
          return Promise.resolve({ done: true, value: undefined });
        }
        return new Promise((resolve) => (waiting = resolve));
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
