import type { Pool, PoolClient } from 'pg';
import { accountOf } from '../contract/accounts.js';
import { eventTime } from '../events/event-time.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { applyEvent, applyPayment, type Applied, type HistoryRecord } from '../history/history-record.js';
import type { HistoryOptions, HistoryStore } from '../history/history-store.js';
import { bucketChanges, readStats, sweepBuckets } from './postgres-buckets.js';
import { recentPages } from './recent-pages.js';

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
 * Every row is an account's (its key leads with the account: two accounts
 * sending one transaction id have two rows), and every statement names the
 * account it reads or writes, but for retention's sweeps, which go through
 * every account at once. The history's start ('started') is the database's,
 * so every account is covered from it.
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

/** More writes in the transaction that applies events: the events new to the history, each with its position. */
export type AlsoInTransaction = (client: PoolClient, applied: ReadonlyArray<readonly [TransactionUpdateEvent, number]>) => Promise<void>;

export interface PostgresHistory extends HistoryStore {
  apply(event: TransactionUpdateEvent): Promise<void>;
  /**
   * Applies events in the order given, in one database transaction: the feeds pass what they hold, in batches.
   * Resolves, for each event, the position the history gave it (history_seq), or false when it was not new (its
   * record already held its event id). `also` runs in the same database transaction with the new events and their
   * positions (the event log of a deployment whose events are kept here: postgres-event-log.ts).
   */
  applyAll(events: readonly TransactionUpdateEvent[], also?: AlsoInTransaction): Promise<Array<number | false>>;
  /** Notes when this database's history started holding events, unless an instance noted it before. */
  start(): Promise<void>;
  /** Epoch ms from which the history holds every transaction of the account updated since (the same for every account). */
  coveredSince(account: string): Promise<number>;
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

/** A change of one transaction's record in an account's history: the rule given the record (undefined: none yet) and the change's seq. */
interface Step {
  account: string;
  transactionId: string;
  rule: (record: HistoryRecord | undefined, seq: number) => Applied;
}

const codeOf = (error: unknown): string | undefined => (error as { code?: unknown } | null)?.code as string | undefined;

/** A record's key in a batch: its account and transaction id, joined by NUL, which no account name holds. */
const keyOf = (account: string, transactionId: string) => `${account}\u0000${transactionId}`;

/** What a transaction's work gives back: its result, and the writes it gave the connection (not awaited: COMMIT follows them). */
interface Worked<T> {
  result: T;
  writes: Array<Promise<unknown>>;
}

/** `pool` pipelines (createPostgresPool): a transaction gives its connection statements together. */
export function createPostgresHistory(pool: Pool, options: PostgresHistoryOptions): PostgresHistory {
  const now = options.now ?? Date.now;
  const sold = new Set(options.soldStatuses);
  const horizon = () => now() - options.retentionMs;

  /**
   * Runs `work` in a transaction, again when PostgreSQL says another writer got in the way, in two round trips: BEGIN
   * goes with work's reads (work awaits `begun` with them, before it writes), and COMMIT with the writes work gave the
   * connection. A write that fails turns that COMMIT into a rollback, and its error is what this throws or tries again on.
   */
  async function inTransaction<T>(work: (client: PoolClient, begun: Promise<unknown>) => Promise<Worked<T>>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      const client = await pool.connect();
      let broken = false;
      // A connection that breaks while checked out (the database gone) emits `error` besides failing the
      // statement under way; the pool listens only to idle ones, and an error nobody hears ends the process.
      const onError = () => (broken = true);
      client.on('error', onError);
      try {
        const { result, writes } = await work(client, client.query('BEGIN'));
        await Promise.all([...writes, client.query('COMMIT')]);
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

  /**
   * Applies each step's rule, in order, to its record (by account and transaction id) under the
   * records' row locks, all in one database transaction (a step sees the record the steps before it
   * made); resolves, per step, the seq it was given when it changed anything, else false; `also` runs
   * last in the same database transaction, with the steps that changed anything. The records are written in two statements and the
   * bucket rows in six at most, however many steps and accounts: applying a backlog in batches costs a
   * round trip per batch, not several per event.
   */
  async function changeAll(
    steps: readonly Step[],
    also?: (client: PoolClient, outcomes: ReadonlyArray<number | false>) => Promise<void>,
  ): Promise<Array<number | false>> {
    return inTransaction(async (client, begun) => {
      const keys = new Map(steps.map(({ account, transactionId }) => [keyOf(account, transactionId), [account, transactionId] as const]));
      // Statements that need no answer of another go together, pipelined (as in bucketChanges' write).
      const [, found, seqs] = await Promise.all([
        begun,
        client.query<{ account: string; record: HistoryRecord }>(
          `SELECT t.account, t.record FROM history_transactions t ` +
            `JOIN unnest($1::text[], $2::text[]) AS k(account, id) ON t.account = k.account AND t.transaction_id = k.id
          ORDER BY t.account, t.transaction_id FOR UPDATE OF t`,
          [[...keys.values()].map(([account]) => account), [...keys.values()].map(([, id]) => id)],
        ),
        client.query<{ seq: string }>("SELECT nextval('history_seq') AS seq FROM generate_series(1, $1::int)", [steps.length]),
      ]);
      const stored = new Map(found.rows.map(({ account, record }) => [keyOf(account, record.transactionId), record]));
      const current = new Map(stored);
      const changed = new Set<string>();
      const buckets = bucketChanges(sold, options.defaultCurrency);
      const outcomes = steps.map(({ account, transactionId, rule }, k) => {
        const key = keyOf(account, transactionId);
        const seq = Number(seqs.rows[k]!.seq);
        const applied = rule(current.get(key), seq);
        if (!applied.changed) return false;
        buckets.change(account, applied.previous, applied.record, seq, !changed.has(key));
        current.set(key, applied.record);
        changed.add(key);
        return seq;
      });
      if (changed.size === 0) return { result: outcomes, writes: [] };
      const at = now();
      const rows = (inserted: boolean) => [...changed].filter((key) => stored.has(key) !== inserted);
      const columns = (changes: string[]) => {
        const records = changes.map((key) => current.get(key)!);
        return [
          changes.map((key) => keys.get(key)![0]),
          records.map((r) => r.transactionId),
          records.map((r) => r.status),
          records.map((r) => r.lastUpdated),
          at,
          records.map((r) => JSON.stringify(r)),
        ];
      };
      // Rows nobody had: a plain INSERT, so that another instance inserting one meanwhile makes this
      // transaction fail (unique_violation) and run again, this time waiting on the row it wrote.
      const sent: Array<Promise<unknown>> = [];
      const fresh = rows(true);
      if (fresh.length > 0) {
        sent.push(
          client.query(
            `INSERT INTO history_transactions (account, transaction_id, status, last_updated, touched_at, record)
             SELECT u.account, u.id, u.status, u.last_updated, $5, u.record
               FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $6::json[]) AS u(account, id, status, last_updated, record)`,
            columns(fresh),
          ),
        );
      }
      const known = rows(false);
      if (known.length > 0) {
        sent.push(
          client.query(
            `UPDATE history_transactions t SET status = u.status, last_updated = u.last_updated, touched_at = $5, record = u.record
             FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $6::json[]) AS u(account, id, status, last_updated, record)
            WHERE t.account = u.account AND t.transaction_id = u.id`,
            columns(known),
          ),
        );
      }
      sent.push(buckets.write(client, at));
      if (also) sent.push(also(client, outcomes));
      return { result: outcomes, writes: sent };
    });
  }

  async function applyAll(events: readonly TransactionUpdateEvent[], also?: AlsoInTransaction): Promise<Array<number | false>> {
    return changeAll(
      events.map((event) => ({
        account: accountOf(event),
        transactionId: event.transactionId,
        rule: (record, seq) => applyEvent(record, event, eventTime(event), seq),
      })),
      also &&
        ((client, outcomes) =>
          also(
            client,
            outcomes.flatMap((seq, index) => (seq === false ? [] : [[events[index]!, seq] as const])),
          )),
    );
  }

  async function sweepRecords(): Promise<number> {
    return inTransaction(async (client, begun) => {
      // Every account's at once: retention is the same for all.
      const [, { rows }] = await Promise.all([
        begun,
        client.query<{ account: string; record: HistoryRecord }>(
          'SELECT account, record FROM history_transactions WHERE touched_at < $1 ORDER BY touched_at LIMIT $2 FOR UPDATE SKIP LOCKED',
          [horizon(), SWEEP_BATCH],
        ),
      ]);
      if (rows.length === 0) return { result: 0, writes: [] };
      const buckets = bucketChanges(sold, options.defaultCurrency);
      for (const { account, record } of rows) buckets.change(account, record, undefined, 0, true);
      const writes = [
        buckets.write(client, now()),
        client.query(
          'DELETE FROM history_transactions t USING unnest($1::text[], $2::text[]) AS k(account, id) ' +
            'WHERE t.account = k.account AND t.transaction_id = k.id',
          [rows.map(({ account }) => account), rows.map(({ record }) => record.transactionId)],
        ),
      ];
      return { result: rows.length, writes };
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

  return {
    apply: async (event) => void (await applyAll([event])),
    applyAll,
    notePayment: async (note, readBack) =>
      (
        await changeAll([
          {
            account: note.account,
            transactionId: note.transactionId,
            rule: (record, seq) => applyPayment(record, note.transactionId, note.at, seq, note.fields, readBack),
          },
        ])
      )[0] !== false,
    // The pages of `recent` are kept, and handed out again while the account's records do not change (recent-pages.ts).
    keepsRecords: true,
    recent: recentPages(pool, { now, retentionMs: options.retentionMs }),
    stats: (query) => readStats(pool, query, now()),
    async records(account, ids) {
      if (ids.length === 0) return [];
      const { rows } = await pool.query<{ record: HistoryRecord }>(
        'SELECT record FROM history_transactions WHERE account = $1 AND transaction_id = ANY($2::text[])',
        [account, ids],
      );
      const byId = new Map(rows.map(({ record }) => [record.transactionId, record]));
      return ids.map((id) => byId.get(id));
    },
    async coveredSince() {
      // The database's start, whatever the account: an account that sent its first event later sent nothing before.
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
