import { idProblem } from '../contract/contract.js';
import { refuse } from '../refusals/refusals.js';
import type { RecentCursor, RecentQuery, StatsQuery } from './history-store.js';
import { bucketStart, INTERVAL_MS, type Interval } from './history-stats.js';

/*
 * The arguments of the history's GraphQL fields, checked and turned into store
 * queries of one account's history (the caller says which: never an argument
 * of the client's): every bound here answers BAD_USER_INPUT naming the argument.
 */

export const MAX_RECENT_PAGE = 100;
export const DEFAULT_RECENT_PAGE = 20;
export const MAX_STATUS_FILTER = 20;
export const MAX_INTERVALS = 1_440;
export const MAX_TOP_PRODUCTS = 100;
/** Intervals covered when `since` is not given: the last hour of minutes, day of hours, week of days. */
export const DEFAULT_INTERVALS: Record<Interval, number> = { MINUTE: 60, HOUR: 24, DAY: 7 };

const CURSOR_PREFIX = 'history:';

/**
 * A cursor is a position (last update, id) and names no account: the query it
 * comes back with says whose history it is read in, so a cursor made in one
 * account's list only ever positions a page of the reader's own.
 */
export function encodeRecentCursor({ lastUpdated, transactionId }: RecentCursor): string {
  return Buffer.from(`${CURSOR_PREFIX}${lastUpdated}:${transactionId}`).toString('base64url');
}

function decodeRecentCursor(cursor: string): RecentCursor {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^history:(\d{1,16}):(.+)$/s.exec(text);
  if (!match || idProblem(match[2]!) !== undefined) throw refuse.notAHistoryCursor(cursor);
  return { lastUpdated: Number(match[1]), transactionId: match[2]! };
}

const time = (date: Date | null | undefined, argument: string): number | undefined => {
  if (date === null || date === undefined) return undefined;
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw refuse.notADateTime(argument);
  return ms;
};

export interface RecentArgs {
  first?: number | null | undefined;
  after?: string | null | undefined;
  status?: readonly string[] | null | undefined;
  since?: Date | null | undefined;
  until?: Date | null | undefined;
}

export function recentQuery(account: string, args: RecentArgs, withTotal = true): RecentQuery {
  const first = args.first ?? DEFAULT_RECENT_PAGE;
  if (first < 0 || first > MAX_RECENT_PAGE) throw refuse.firstOutOfRange(MAX_RECENT_PAGE, first);
  const statuses = [...new Set(args.status ?? [])];
  if (statuses.length > MAX_STATUS_FILTER) throw refuse.tooManyStatuses(MAX_STATUS_FILTER, statuses.length);
  for (const status of statuses) if (status.length > 256) throw refuse.statusTooLong(status);
  const since = time(args.since, 'since') ?? 0;
  const until = time(args.until, 'until') ?? Number.MAX_SAFE_INTEGER;
  if (since >= until) throw refuse.sinceNotBeforeUntil();
  return { account, first, after: args.after ? decodeRecentCursor(args.after) : undefined, statuses, since, until, withTotal };
}

export interface StatsArgs {
  since?: Date | null | undefined;
  until?: Date | null | undefined;
  interval?: Interval | null | undefined;
}

/**
 * The range aligned outwards to whole intervals (UTC): `since` down, `until`
 * up; by default the last DEFAULT_INTERVALS intervals up to now.
 */
export function statsQuery(account: string, args: StatsArgs, now: number): StatsQuery {
  const interval = args.interval ?? 'MINUTE';
  const width = INTERVAL_MS[interval];
  const givenUntil = time(args.until, 'until');
  const until = bucketStart((givenUntil ?? now) + width - 1, width);
  const givenSince = time(args.since, 'since');
  const since = givenSince === undefined ? until - DEFAULT_INTERVALS[interval] * width : bucketStart(givenSince, width);
  if (givenSince !== undefined && givenUntil !== undefined && givenSince >= givenUntil) throw refuse.sinceNotBeforeUntil();
  if (since >= until) throw refuse.sinceNotBeforeUntil();
  const count = (until - since) / width;
  if (count > MAX_INTERVALS) {
    throw refuse.tooManyIntervals(count, interval, MAX_INTERVALS);
  }
  return { account, since, until, interval };
}
