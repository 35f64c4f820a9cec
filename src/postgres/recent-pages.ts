import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import { boundedCache } from '../backends/bounded-cache.js';
import type { HistoryRecord } from '../history/history-record.js';
import type { RecentPage, RecentQuery } from '../history/history-store.js';
import { countInBucketsSql, type Parameter } from './postgres-buckets.js';
import { sharedReads } from './shared-reads.js';

/*
 * `recent` of the PostgreSQL history: a page of an account's records, newest first, and their count when asked for.
 *
 * Pages are kept ready. Most of a read's cost is not the database's but the gateway's: parsing the records' JSON
 * (about 1 KB each) and the garbage it leaves. So each instance keeps the pages it read, by account and arguments,
 * with the account's change marker (migrations: history_changes, a new random value written by the database itself
 * in the transaction of every change of the account's records), read in the same statement as the page, hence in
 * the same snapshot. A read sends the marker of the page it keeps; the statement reads the marker now and reads the
 * page again only when it differs. When it is the same, no change of the account's records committed between the
 * two snapshots, so the page kept is the one the database would give now: a read never misses an event whose
 * transaction committed before it began (every webhook acknowledged after its event was applied), on whichever
 * instance it was applied. A sequence would not do: its values are taken outside transactions, so a value seen
 * may belong to a change not committed yet, which a page read meanwhile does not hold.
 *
 * Time moves a page too: a record leaves it once past retention (it is then skipped by reads until a sweep deletes
 * it). A page kept is therefore also given up when the oldest change of its records (and of the one after it, which
 * says whether there is a next page) passes retention. The count, when asked for, is read at every read: it counts
 * records the page does not hold.
 */

/** Pages kept per instance (up to MAX_RECENT_PAGE + 1 records each); the least recently read go first. */
const KEPT_PAGES = 64;
const MINUTE = 60_000;
/** The marker sent when no page is kept: never a marker (a UUID, or '' for an account that never changed). */
const NONE = '-';

interface KeptPage {
  marker: string;
  records: HistoryRecord[];
  hasNextPage: boolean;
  /** The oldest `touched_at` of the page's records and the one after them; null when there were none. */
  oldest: number | null;
}

/** The name of a prepared statement of this text: one per text, so a connection never holds two texts under one name. */
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `vg_history_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** Everything a page depends on but time: whose it is and the arguments (cursors name no account: the key does). */
const keyOf = (query: RecentQuery) =>
  JSON.stringify([
    query.account,
    query.first,
    query.after?.lastUpdated,
    query.after?.transactionId,
    query.statuses,
    query.since,
    query.until,
  ]);

/** The account's change marker now ('' when its records never changed). */
const markerSql = (account: string) =>
  `SELECT coalesce((SELECT marker::text FROM history_changes WHERE account = ${account}), '') AS marker`;
const MARKER = markerSql('$1');

export function recentPages(pool: Pool, options: { now: () => number; retentionMs: number }): (query: RecentQuery) => Promise<RecentPage> {
  const { now } = options;
  const kept = boundedCache<KeptPage>({ max: KEPT_PAGES });
  // The reads of an account waiting at once share one look at its marker.
  const markerNow = sharedReads(
    (account: string) => account,
    async (account) =>
      (await pool.query<{ marker: string }>({ name: 'vg_history_marker', text: MARKER, values: [account] })).rows[0]!.marker,
  );

  /**
   * The account's records last updated in `since`–`until` (of these statuses: `matching` says both),
   * within retention, without counting rows: the whole minutes of the range from the buckets' per-status counts (which
   * count each record in the minute, hour and day of its last update), less the records past
   * retention not swept yet (found by the index on the last change), plus the records of the
   * range's partial minutes at its ends, counted by the index on the last update.
   */
  function countRecentSql(
    parameter: Parameter,
    account: string,
    horizonAt: string,
    matching: string,
    since: number,
    until: number,
    statuses: readonly string[] | null,
  ): string {
    const [from, to] = [Math.ceil(since / MINUTE) * MINUTE, Math.floor(until / MINUTE) * MINUTE];
    const rows = (where: string) => `(SELECT count(*) FROM history_transactions WHERE ${where} AND ${matching})`;
    const between = (a: number, b: number) => `(last_updated >= ${parameter(a)} AND last_updated < ${parameter(b)})`;
    if (from >= to) return rows(`touched_at >= ${horizonAt} AND ${between(since, until)}`);
    return `(${countInBucketsSql(parameter, account, from, to, now(), statuses)}
      - ${rows(`touched_at < ${horizonAt} AND ${between(from, to)}`)}
      + ${rows(`touched_at >= ${horizonAt} AND (${between(since, from)} OR ${between(to, until)})`)})`;
  }

  /** The page kept under `key`, unless one of its records went past retention since (`horizon`). */
  function usable(key: string, horizon: number): KeptPage | undefined {
    const held = kept.get(key);
    return held && (held.oldest === null || held.oldest >= horizon) ? held : undefined;
  }

  /**
   * The page, and the count when asked for, in one statement: a round trip is most of a read's cost. The statement is a
   * named (prepared) one whose text depends only on whether statuses and the count are asked for, so each connection
   * parses it once (PostgreSQL still plans it at each execution: above). The page's scan sits under a condition on the
   * marker alone, which PostgreSQL tests once before it (a one-time filter): an unchanged page is not read again.
   */
  async function readPage(query: RecentQuery): Promise<RecentPage> {
    const horizon = now() - options.retentionMs;
    const key = keyOf(query);
    const held = usable(key, horizon);
    // As in process: a cursor at or past `until` pages from `until` down.
    const upper = query.after && query.after.lastUpdated < query.until ? query.after : { lastUpdated: query.until, transactionId: '' };
    const values: unknown[] = [];
    const parameter: Parameter = (value) => `$${values.push(value)}`;
    const account = parameter(query.account);
    const statuses = query.statuses.length === 0 ? null : query.statuses;
    const horizonAt = parameter(horizon);
    // Every row counted or paged is the account's: the cursor positions a page within its history only. The status
    // condition is written only when there is one, so that the plan kept for the statement is the right one for it.
    const matching = `account = ${account}${statuses ? ` AND status = ANY(${parameter(statuses)}::text[])` : ''}`;
    const page = `SELECT record, touched_at FROM history_transactions
        WHERE c.marker <> ${parameter(held?.marker ?? NONE)}
          AND touched_at >= ${horizonAt} AND last_updated >= ${parameter(query.since)} AND ${matching}
          AND (last_updated, transaction_id) < (${parameter(upper.lastUpdated)}, ${parameter(upper.transactionId)}::text COLLATE "C")
        ORDER BY last_updated DESC, transaction_id DESC LIMIT ${parameter(query.first + 1)}`;
    const count =
      query.withTotal === false ? 'NULL' : countRecentSql(parameter, account, horizonAt, matching, query.since, query.until, statuses);
    const text = `SELECT c.marker, p.records, p.oldest, ${count} AS n
      FROM (${markerSql(account)}) c,
        LATERAL (SELECT json_agg(r.record) AS records, min(r.touched_at) AS oldest FROM (${page}) r) p`;
    const { rows } = await pool.query<{ marker: string; records: HistoryRecord[] | null; oldest: string | null; n: string | null }>({
      name: statementName(text),
      text,
      values,
    });
    const row = rows[0]!;
    let found: KeptPage;
    if (held && row.marker === held.marker) found = held;
    else {
      const records = row.records ?? [];
      found = {
        marker: row.marker,
        records: records.slice(0, query.first),
        hasNextPage: records.length > query.first,
        oldest: row.oldest === null ? null : Number(row.oldest),
      };
      kept.set(key, found);
    }
    return { records: found.records, hasNextPage: found.hasNextPage, ...(row.n === null ? {} : { totalCount: Number(row.n) }) };
  }
  // After a change, the reads of a page waiting at once share one reading of it (each would parse the same JSON).
  const pageNow = sharedReads((query: RecentQuery) => `${keyOf(query)}/${query.withTotal !== false}`, readPage);

  return async function recent(query: RecentQuery): Promise<RecentPage> {
    // Without a count to read, the marker alone says whether the page kept stands: a key lookup whose plan PostgreSQL
    // keeps, where the page's statement is planned again at every execution (its plan for unknown arguments is
    // estimated dearer than one for the arguments given, so PostgreSQL never settles on it: about 140 µs each time).
    const held = query.withTotal === false ? usable(keyOf(query), now() - options.retentionMs) : undefined;
    if (held && (await markerNow(query.account)) === held.marker) return { records: held.records, hasNextPage: held.hasNextPage };
    return pageNow(query);
  };
}
