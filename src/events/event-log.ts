import { GraphQLError } from 'graphql';
import { accountOf, DEFAULT_ACCOUNT } from '../contract/contract.js';
import { createRecentEvents, type RecentEventsOptions } from './recent-events.js';
import type { TransactionUpdateEvent } from './normalize.js';
import { ErrorCode } from '../errors.js';
import { refuseOperation } from '../refusals/operation-refusals.js';

/*
 * The log of published events: it decides which webhooks are new (publishing
 * each distinct event once), fans them out to every instance, and lets a
 * subscriber that lost its connection replay what it missed. In process it is
 * a ring buffer; with Redis, a capped stream.
 *
 * Positions are the log's own ids ("<ms>-<seq>", ordered like Redis stream
 * ids). They are what SSE writes into `id:` lines, so no sender's text ever
 * frames a stream; `after` and Last-Event-ID take a position or an event id.
 */

/** An event and its place in the log; positions only grow. */
export interface LoggedEvent {
  position: string;
  event: TransactionUpdateEvent;
}

/** Part of a replay: the log is read a page at a time, so no read holds the log (or Redis) for long. */
export interface ReplayPage {
  /** Oldest first, whatever their account. */
  events: LoggedEvent[];
  /** Where the next page starts (`readAfter(next)`); undefined once this page reached the newest event. */
  next: string | undefined;
}

/**
 * What a log keeps below its count (EVENT_LOG_SIZE): every event younger than
 * `spanMs`, and the newest `leastEvents` whatever their age; older events go.
 */
export interface LogKeep {
  spanMs: number;
  leastEvents: number;
}

/**
 * How an event is told from a redelivery: `id`, by its event id (the sender
 * gave one); `content`, by its transaction being the same as in the last
 * event published for that transaction (a legacy body without ids: a status
 * that comes back after another is a new event).
 */
export type DedupeBy = 'id' | 'content';

export interface EventLog {
  /**
   * Appends the event unless it is a redelivery, deciding and appending in one
   * step (so a crash in between can neither lose nor double it). Resolves with
   * its place, or `undefined` for a redelivery.
   */
  append(event: TransactionUpdateEvent, dedupeBy: DedupeBy): Promise<LoggedEvent | undefined>;
  /**
   * The first page of the events after `cursor` (a position this log wrote,
   * or an event id of `account`: its newest copy). Throws `EVENTS_EXPIRED`
   * when the log no longer reaches it (or never held it); any other failure
   * means it cannot be read now (Redis away), and may be asked again.
   * @param account whose event id `cursor` may be (ids are an account's own); @default DEFAULT_ACCOUNT
   */
  readAfter(cursor: string, account?: string): Promise<ReplayPage>;
  /**
   * Where `account` stands in this log, from its own events only: the
   * position of the newest event of `account` the log knows of, else the
   * log's start. Nothing of `account` comes after it; other accounts' events
   * leave it as it is (positions are shared, so the log's newest would tell
   * when any account last received one). The event bus tells it to an
   * account's subscriber that resumes too late (EVENTS_EXPIRED), and resumes
   * from it live.
   */
  accountCursor(account: string): Promise<string>;
  /** Calls `listener` with every event appended from now on, on any instance, in log order. */
  onAppend(listener: (logged: LoggedEvent) => void): () => void;
  /** Whether appends can succeed now. */
  ready(): boolean;
  /** Resolves once events appended from now on, on any instance, reach `onAppend` listeners. */
  whenLive(): Promise<void>;
  close(): Promise<void>;
}

const POSITION = /^(\d{1,16})-(\d{1,16})$/;

export function isPosition(text: string): boolean {
  return POSITION.test(text);
}

/**
 * Whether `error` is the log's "no longer reaches it" (any other failure of a
 * read is one of now): `refuseOperation.eventsExpired`, whose
 * `extensions.cursor` is where to resume: the account's cursor
 * (`EventLog.accountCursor`) for a subscriber of one account, else the log's
 * position. Subscribing `after` it once reloaded misses nothing, and SSE
 * writes it as the frame's `id:` so an EventSource's automatic reconnect goes
 * on live instead of failing again.
 */
export function isEventsExpired(error: unknown): boolean {
  return error instanceof GraphQLError && error.extensions.code === ErrorCode.EVENTS_EXPIRED;
}

/** Orders two positions ("<ms>-<seq>"). */
export function comparePositions(a: string, b: string): number {
  const [, am = '0', as = '0'] = POSITION.exec(a) ?? [];
  const [, bm = '0', bs = '0'] = POSITION.exec(b) ?? [];
  return Number(am) - Number(bm) || Number(as) - Number(bs);
}

/** A page of a stored log after a cursor, or where that log stands now when it no longer reaches the cursor. */
export type StoredReplay = ReplayPage | { expired: string };

export interface MemoryEventLogOptions extends RecentEventsOptions {
  /** Most events kept for replay (EVENT_LOG_SIZE). */
  capacity: number;
  /** Most bytes of events kept (their JSON), the newest always (the configuration's `eventLogMaxBytes`). */
  maxBytes: number;
  /** What is kept below `capacity`; @default everything */
  keep?: LogKeep;
  /** Most events one `readAfter` returns. */
  pageEvents: number;
  /**
   * Told of each event as it is admitted, before `append` resolves: a read
   * model fed here (the history) has it by the time the webhook is answered.
   * When it returns a promise (the event is being committed to PostgreSQL),
   * the event is logged and published only once that resolves; if it
   * rejects, the event is forgotten (its retry is new) and `append` rejects
   * with it: the webhook is answered 503, never 200 for an event not kept.
   * When it resolves `false`, the store already held the event (kept before
   * this process started): a redelivery, answered as one and not published;
   * when it resolves a number, that is the event's position in the store,
   * which the log takes as its own (`<epoch>-<number>`).
   */
  onAdmitted?: (event: TransactionUpdateEvent) => void | Promise<boolean | number | void>;
  /** The first part of every position; @default the time the log was made. */
  epoch?: number;
  /** Reads what the ring no longer (or not yet, after a restart) holds, from the store that keeps events. */
  storedReplay?: (cursor: string, account: string) => Promise<StoredReplay>;
  /** The position of the newest event of an account the store holds (it outlives the process), if any. */
  storedAccountNewest?: (account: string) => Promise<string | undefined>;
  /** Most accounts whose newest position is remembered; past it the least recently appended to is forgotten. @default 10000 */
  maxAccounts?: number;
}

/**
 * The in-process log: a ring of the last `capacity` events, and no more than
 * `maxBytes` of them: a count alone let large webhooks fill the process (a
 * thousand of 700 KB took one to 2 GB); below those, what `keep` says.
 * Positions start with the time the log was made, so a position from an
 * earlier process is never mistaken for one of this one.
 */
export function createMemoryEventLog(options: MemoryEventLogOptions): EventLog {
  const { capacity, maxBytes } = options;
  const { spanMs, leastEvents } = options.keep ?? { spanMs: Number.POSITIVE_INFINITY, leastEvents: capacity };
  const { pageEvents } = options;
  const now = options.now ?? Date.now;
  /** JSON size of each event of the ring, in the same order, and their sum; and when each was appended. */
  const sizes: number[] = [];
  const times: number[] = [];
  let bytes = 0;
  const epoch = options.epoch ?? Date.now();
  const recent = createRecentEvents(options);
  const ring: LoggedEvent[] = [];
  const listeners = new Set<(logged: LoggedEvent) => void>();
  /** Events admitted and still being kept (`onAdmitted`'s promise), by their dedupe keys: a redelivery meanwhile waits for them. */
  const keeping = new Map<string, Promise<boolean | number>>();
  const keysOf = (event: TransactionUpdateEvent) => [
    `id:${accountOf(event)}:${event.eventId}`,
    `tx:${accountOf(event)}:${event.transactionId}`,
  ];
  let sequence = 0;
  const current = () => `${epoch}-${sequence}`;
  /**
   * Account → the position of its newest event, kept when the ring drops the event (the account's cursor must not move back:
   * nothing of it came after). In the order last appended to, so the first is the one forgotten past `maxAccounts`.
   */
  const accountNewest = new Map<string, string>();
  const maxAccounts = options.maxAccounts ?? 10_000;

  function indexOf(cursor: string, account: string): number {
    const match = POSITION.exec(cursor);
    if (match && Number(match[1]) === epoch) {
      // The ring's positions ascend (not always by one: a store may give them): found by halving.
      const wanted = Number(match[2]);
      for (let low = 0, high = ring.length - 1; low <= high;) {
        const middle = (low + high) >> 1;
        const at = Number(ring[middle]!.position.slice(ring[middle]!.position.indexOf('-') + 1));
        if (at === wanted) return middle;
        if (at < wanted) low = middle + 1;
        else high = middle - 1;
      }
    }
    return ring.findLastIndex(({ event }) => event.eventId === cursor && accountOf(event) === account);
  }

  return {
    async append(event, dedupeBy) {
      const [idKey, transactionKey] = keysOf(event);
      if (!recent.admit(event, dedupeBy)) {
        // Taken for a redelivery of an event still being kept: answered as that one is, once it is.
        await keeping.get(dedupeBy === 'id' ? idKey! : transactionKey!);
        return undefined;
      }
      const kept = options.onAdmitted?.(event);
      if (kept) {
        const settled = kept.then(
          (outcome): boolean | number => (typeof outcome === 'number' ? outcome : outcome !== false),
          (error: unknown) => {
            recent.forget(event);
            throw error;
          },
        );
        for (const key of [idKey!, transactionKey!]) keeping.set(key, settled);
        let outcome: boolean | number;
        try {
          outcome = await settled;
        } finally {
          for (const key of [idKey!, transactionKey!]) if (keeping.get(key) === settled) keeping.delete(key);
        }
        if (outcome === false) return undefined;
        if (typeof outcome === 'number') sequence = Math.max(sequence, outcome - 1);
      }
      const logged = { position: `${epoch}-${++sequence}`, event };
      const account = accountOf(event);
      accountNewest.delete(account);
      accountNewest.set(account, logged.position);
      if (accountNewest.size > maxAccounts) accountNewest.delete(accountNewest.keys().next().value!);
      const size = JSON.stringify(event).length;
      const at = now();
      ring.push(logged);
      sizes.push(size);
      times.push(at);
      bytes += size;
      const expired = () => ring.length > leastEvents && (times[0] ?? at) < at - spanMs;
      while (ring.length > capacity || (bytes > maxBytes && ring.length > 1) || expired()) {
        ring.shift();
        times.shift();
        bytes -= sizes.shift() ?? 0;
      }
      // Fan-out after the caller's answer: listeners are subscriber work.
      setImmediate(() => {
        for (const listener of listeners) listener(logged);
      });
      return logged;
    },
    async readAfter(cursor, account = DEFAULT_ACCOUNT) {
      if (cursor === current()) return { events: [], next: undefined };
      const index = indexOf(cursor, account);
      if (index < 0 && options.storedReplay) {
        const stored = await options.storedReplay(cursor, account);
        if ('expired' in stored)
          throw refuseOperation.eventsExpired(cursor, comparePositions(stored.expired, current()) > 0 ? stored.expired : current());
        return stored;
      }
      if (index < 0) throw refuseOperation.eventsExpired(cursor, current());
      const events = ring.slice(index + 1, index + 1 + pageEvents);
      return { events, next: index + 1 + pageEvents < ring.length ? events.at(-1)?.position : undefined };
    },
    async accountCursor(account) {
      const stored = await options.storedAccountNewest?.(account);
      const held = accountNewest.get(account);
      const newest = stored && held ? (comparePositions(stored, held) > 0 ? stored : held) : (stored ?? held);
      // Before every position this log writes (`<epoch>-1` on), or the store gives.
      return newest ?? `${epoch}-0`;
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    ready: () => true,
    whenLive: async () => {},
    async close() {
      listeners.clear();
    },
  };
}
