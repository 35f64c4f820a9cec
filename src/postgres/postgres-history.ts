import type { Pool, PoolClient } from 'pg';
import { eventTime } from '../events/event-time.js';
import { applyEvent, applyPayment, type Applied, type HistoryRecord } from '../history/history-record.js';
import type { HistoryOptions, HistoryStore, RecentPage, RecentQuery } from '../history/history-store.js';
import { countInBuckets, readStats, sweepBuckets, writeBuckets } from './postgres-buckets.js';

/*
 * The history in PostgreSQL, shared by every instance of a deployment and kept
 * across restarts (tables: migrations/). The rules are the TypeScript ones of
 * src/history/ (history-record.ts, history-stats.ts), as in process: an event
 * is applied in one database transaction that locks the transaction's row
 * (SELECT … FOR UPDATE), applies the rule to the record read, writes the
 * record and adds its increments to the bucket rows. Two instances applying
 * events of one transaction at once therefore take turns on the row, and an
 * event id the record already holds changes nothing, so applying an event
 * again is harmless.
 *
 * Bounded by HISTORY_RETENTION only (no count bound: the database holds an
 * operator's week); retention is a delete by an index on the last change,
 * run by a timer, never on the event path. Reads skip records past it that
 * the timer has not deleted yet.
 */

export interface PostgresHistoryOptions extends Omit<HistoryOptions, 'maxTransactions'> {
  /** How often records and buckets past retention are deleted (ms). */
  sweepEveryMs: number;
  /** Told of a sweep that failed (the next one tries again). */
  onSweepError?: (error: unknown) => void;
}

export interface PostgresHistory extends HistoryStore {
  apply(event: Parameters<NonNullable<HistoryStore['apply']>>[0]): Promise<void>;
  /** Notes when this database's history started holding events, unless an instance noted it before. */
  start(): Promise<void>;
  /** Epoch ms from which the history holds every transaction updated since. */
  coveredSince(): Promise<number>;
  /** Deletes what is past retention now (the timer calls it); resolves how many records went. */
  sweep(): Promise<number>;
  /** Stops the sweep timer (the pool is its owner's to end). */
  close(): void;
}

/** Records deleted per statement of a sweep, so a sweep never holds many locks at once. */
const SWEEP_BATCH = 500;
/**
 * PostgreSQL's answers that mean "run the transaction again": a row inserted meanwhile by another
 * instance (unique_violation), a deadlock between bucket rows, a serialization failure.
 */
const RETRY_CODES = new Set(['23505', '40P01', '40001']);
const ATTEMPTS = 5;
const MINUTE = 60_000;

const codeOf = (error: unknown): string | undefined => (error as { code?: unknown } | null)?.code as string | undefined;

export function createPostgresHistory(pool: Pool, options: PostgresHistoryOptions): PostgresHistory {
  const now = options.now ?? Date.now;
  const sold = new Set(options.soldStatuses);
  const horizon = () => now() - options.retentionMs;

  /** Runs `work` in a transaction, again when PostgreSQL says another writer got in the way. */
  async function inTransaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      const client = await pool.connect();
      let broken = false;
      // A connection that breaks while checked out (the database gone) emits `error` besides failing the
      // statement under way; the pool listens only to idle ones, and an error nobody hears ends the process.
      const onError = () => (broken = true);
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => (broken = true));
        if (attempt >= ATTEMPTS || !RETRY_CODES.has(codeOf(error) ?? '')) throw error;
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    }
  }

  /** Applies a rule to a transaction's record under its row lock; resolves whether it changed anything. */
  async function change(transactionId: string, rule: (record: HistoryRecord | undefined, seq: number) => Applied): Promise<boolean> {
    return inTransaction(async (client) => {
      const found = await client.query<{ record: HistoryRecord }>('SELECT record FROM history_transactions WHERE transaction_id = $1 FOR UPDATE', [transactionId]);
      const { rows } = await client.query<{ seq: string }>("SELECT nextval('history_seq') AS seq");
      const seq = Number(rows[0]!.seq);
      const applied = rule(found.rows[0]?.record, seq);
      if (!applied.changed) return false;
      const { record } = applied;
      const at = now();
      const values = [transactionId, record.status, record.lastUpdated, at, JSON.stringify(record)];
      // A row nobody had: a plain INSERT, so that another instance inserting it meanwhile makes this
      // one fail (unique_violation) and run again, this time waiting on the row it wrote.
      if (found.rows.length === 0) await client.query('INSERT INTO history_transactions (transaction_id, status, last_updated, touched_at, record) VALUES ($1, $2, $3, $4, $5)', values);
      else await client.query('UPDATE history_transactions SET status = $2, last_updated = $3, touched_at = $4, record = $5 WHERE transaction_id = $1', values);
      await writeBuckets(client, sold, applied.previous, record, at, seq);
      return true;
    });
  }

  async function sweepRecords(): Promise<number> {
    return inTransaction(async (client) => {
      const { rows } = await client.query<{ record: HistoryRecord }>(
        'SELECT record FROM history_transactions WHERE touched_at < $1 ORDER BY touched_at LIMIT $2 FOR UPDATE SKIP LOCKED',
        [horizon(), SWEEP_BATCH],
      );
      if (rows.length === 0) return 0;
      const at = now();
      for (const { record } of rows) await writeBuckets(client, sold, record, undefined, at, 0);
      await client.query('DELETE FROM history_transactions WHERE transaction_id = ANY($1)', [rows.map(({ record }) => record.transactionId)]);
      return rows.length;
    });
  }

  async function sweep(): Promise<number> {
    let dropped = 0;
    for (let batch = await sweepRecords(); batch > 0; batch = batch === SWEEP_BATCH ? await sweepRecords() : 0) dropped += batch;
    // Bucket rows nothing changed for the retention: their records went before them (above).
    await sweepBuckets(pool, horizon());
    return dropped;
  }

  const timer = setInterval(() => {
    sweep().catch((error: unknown) => options.onSweepError?.(error));
  }, options.sweepEveryMs);
  timer.unref();

  async function recent(query: RecentQuery): Promise<RecentPage> {
    // As in process: a cursor at or past `until` pages from `until` down.
    const upper = query.after && query.after.lastUpdated < query.until ? query.after : { lastUpdated: query.until, transactionId: '' };
    const statuses = query.statuses.length === 0 ? null : query.statuses;
    const [page, totalCount] = await Promise.all([
      pool.query<{ record: HistoryRecord }>(
        `SELECT record FROM history_transactions
          WHERE touched_at >= $1 AND last_updated >= $2 AND ($3::text[] IS NULL OR status = ANY($3::text[]))
            AND (last_updated, transaction_id) < ($4, $5::text COLLATE "C")
          ORDER BY last_updated DESC, transaction_id DESC LIMIT $6`,
        [horizon(), query.since, statuses, upper.lastUpdated, upper.transactionId, query.first + 1],
      ),
      countRecent(query.since, query.until, statuses),
    ]);
    const records = page.rows.map((row) => row.record);
    return { records: records.slice(0, query.first), hasNextPage: records.length > query.first, totalCount };
  }

  /**
   * Records last updated in `since`–`until` (of these statuses), within retention, without
   * counting rows: the whole minutes of the range from the buckets' per-status counts (which
   * count each record in the minute, hour and day of its last update), less the records past
   * retention not swept yet (found by the index on the last change), plus the records of the
   * range's partial minutes at its ends, counted by the index on the last update.
   */
  async function countRecent(since: number, until: number, statuses: readonly string[] | null): Promise<number> {
    const [from, to] = [Math.ceil(since / MINUTE) * MINUTE, Math.floor(until / MINUTE) * MINUTE];
    const rows = (where: string, values: unknown[]) =>
      pool.query<{ n: string }>(`SELECT count(*) AS n FROM history_transactions WHERE ${where} AND ($1::text[] IS NULL OR status = ANY($1::text[]))`, [statuses, ...values]);
    if (from >= to) return Number((await rows('touched_at >= $2 AND last_updated >= $3 AND last_updated < $4', [horizon(), since, until])).rows[0]!.n);
    const [whole, expired, ends] = await Promise.all([
      countInBuckets(pool, from, to, statuses),
      rows('touched_at < $2 AND last_updated >= $3 AND last_updated < $4', [horizon(), from, to]),
      rows('touched_at >= $2 AND ((last_updated >= $3 AND last_updated < $4) OR (last_updated >= $5 AND last_updated < $6))', [horizon(), since, from, to, until]),
    ]);
    return whole - Number(expired.rows[0]!.n) + Number(ends.rows[0]!.n);
  }

  return {
    async apply(event) {
      await change(event.transactionId, (record, seq) => applyEvent(record, event, eventTime(event), seq));
    },
    notePayment: (note, readBack) => change(note.transactionId, (record, seq) => applyPayment(record, note.transactionId, note.at, seq, note.fields, readBack)),
    recent,
    stats: (query) => readStats(pool, query),
    async records(ids) {
      if (ids.length === 0) return [];
      const { rows } = await pool.query<{ record: HistoryRecord }>('SELECT record FROM history_transactions WHERE transaction_id = ANY($1::text[])', [ids]);
      const byId = new Map(rows.map(({ record }) => [record.transactionId, record]));
      return ids.map((id) => byId.get(id));
    },
    async coveredSince() {
      const { rows } = await pool.query<{ value: string }>("SELECT value FROM history_meta WHERE key = 'started'");
      // Not started yet: it holds nothing, so it covers from now.
      return Math.max(rows[0] ? Number(rows[0].value) : now(), horizon());
    },
    async start() {
      await pool.query("INSERT INTO history_meta (key, value) VALUES ('started', $1) ON CONFLICT (key) DO NOTHING", [now()]);
    },
    sweep,
    close: () => clearInterval(timer),
  };
}
