import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { describe, expect, it, type TestContext } from 'vitest';
import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { contributionOf, type HistoryRecord } from '../../src/history/history-record.js';
import { recentQuery, statsQuery } from '../../src/history/history-queries.js';
import { bucketStart, increments, LEVELS, type Interval, type TransactionStats } from '../../src/history/history-stats.js';
import type { HistoryStore } from '../../src/history/history-store.js';
import { createMemoryHistory } from '../../src/history/memory-history.js';
import { createLogger } from '../../src/logging/logger.js';
import {
  createPostgresPool,
  migrate,
  MIGRATIONS_DIR,
  MIGRATIONS_TABLE,
  withMigrationClient,
} from '../../src/postgres/postgres-database.js';
import { createPostgresHistory } from '../../src/postgres/postgres-history.js';
import { historyEvent as event } from '../helpers/history-events.js';
import { testDatabase } from '../helpers/postgres.js';

/*
 * A deployment's database already holds a history when a migration comes:
 * each one is tried on a database migrated up to the one before it, with
 * rows in it (written as the store of that time wrote them), and the store
 * of today must then read them as the in-process store reads the same
 * events, and go on applying.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const SOLD = ['completed'];
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** Runs `count` migrations up or down, as `npm run migrate` does. */
const migrateBy = (url: string, direction: 'up' | 'down', count: number) =>
  withMigrationClient(url, (dbClient) =>
    runner({ dbClient, dir: MIGRATIONS_DIR, migrationsTable: MIGRATIONS_TABLE, direction, count, checkOrder: true, logger: silent }),
  );

/** A first-schema history (one for the whole database): the records as made by the rules, and the bucket rows they add up to. */
async function writeFirstSchema(client: pg.Pool, records: HistoryRecord[], at: number): Promise<void> {
  const totals = new Map<string, [string, number, string, number]>();
  const products = new Map<string, [string, number, string, number, number, string, number]>();
  for (const record of records) {
    await client.query(
      'INSERT INTO history_transactions (transaction_id, status, last_updated, touched_at, record) VALUES ($1, $2, $3, $4, $5)',
      [record.transactionId, record.status, record.lastUpdated, at, JSON.stringify(record)],
    );
    const contribution = contributionOf(record.status, record.products, new Set(SOLD), 'EUR');
    for (const [level, width] of LEVELS) {
      const start = bucketStart(record.lastUpdated, width);
      for (const [field, by] of increments(contribution, 1)) {
        // The first schema knew no currencies: their fields (N:, T:, S:, Q:, A:) came later.
        if (field.startsWith('q:') || field.startsWith('a:') || /^[NTSQA]:/.test(field)) continue;
        const row = totals.get(`${level}/${start}/${field}`) ?? [level, start, field, 0];
        row[3] += by;
        totals.set(`${level}/${start}/${field}`, row);
      }
      if (!contribution.sold) continue;
      for (const [productId, name, quantity, amount] of contribution.products) {
        const row = products.get(`${level}/${start}/${productId}`) ?? [level, start, productId, 0, 0, name, record.latest[1]];
        row[3] += quantity;
        row[4] += amount;
        products.set(`${level}/${start}/${productId}`, row);
      }
    }
  }
  for (const row of totals.values())
    await client.query('INSERT INTO history_bucket_totals (level, start, field, value, touched_at) VALUES ($1, $2, $3, $4, $5)', [
      ...row,
      at,
    ]);
  for (const row of products.values()) {
    await client.query(
      'INSERT INTO history_bucket_products (level, start, product_id, quantity, amount, name, name_seq, touched_at) ' +
        'VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
      [...row, at],
    );
  }
  const seq = Math.max(...records.flatMap((record) => record.entries.map((entry) => entry[1])));
  await client.query("SELECT setval('history_seq', $1)", [seq]);
  await client.query("INSERT INTO history_meta (key, value) VALUES ('started', $1)", [T0]);
}

const ids = ['t0', 't1', 't2', 't3', 't4', 't5', 'never'];

/** What GraphQL reads of the account, alike in both stores. */
async function expectAlike(store: HistoryStore, memory: HistoryStore, account: string, now: number): Promise<void> {
  expect(await store.records(account, ids)).toEqual(await memory.records(account, ids));
  for (const args of [
    { first: 100 },
    { first: 2, status: ['completed'] },
    { first: 3, since: new Date(T0 + 2_000), until: new Date(T0 + 120_000) },
  ]) {
    expect(await store.recent(recentQuery(account, args)), JSON.stringify(args)).toEqual(await memory.recent(recentQuery(account, args)));
  }
  for (const [interval, since, until] of [
    ['MINUTE', T0 - 3_600_000, T0 + 3_600_000],
    ['HOUR', T0 - DAY, T0 + DAY],
    ['DAY', T0 - WEEK, T0 + DAY],
  ] as Array<[Interval, number, number]>) {
    const query = statsQuery(account, { since: new Date(since), until: new Date(until), interval }, now);
    expect(withoutCurrencies(await store.stats(query)), interval).toEqual(withoutCurrencies(await memory.stats(query)));
  }
}

/**
 * Sums written before currencies were kept have no per-currency part (the migration cannot know a currency the
 * configuration decides): everything else reads alike.
 */
const withoutCurrencies = (stats: TransactionStats) => ({
  ...stats,
  byCurrency: [],
  buckets: stats.buckets.map((b) => ({ ...b, byCurrency: [] })),
});

async function firstSchemaDatabase(ctx: TestContext) {
  const database = await testDatabase();
  const logger = createLogger('silent');
  const pool = createPostgresPool(database.url, logger);
  ctx.onTestFinished(async () => {
    await pool.end();
    await database.drop();
  });
  expect((await migrateBy(database.url, 'up', 1)).map((m) => m.name)).toEqual(['1764000000000_history']);
  return { database, logger, pool };
}

/** The migrations after the first schema, in order. */
const LATER = [
  '1795723200000_history-accounts',
  '1795900000000_history-sums-in-keys',
  '1796000000000_history-currencies',
  '1796100000000_history-change-markers',
  '1796200000000_event-log',
];

describe('PostgreSQL history migrations on a database holding a history', () => {
  it('moves every row of the first schema to the default account, and reads and applies on as the in-process store does', async (ctx) => {
    const { database, logger, pool } = await firstSchemaDatabase(ctx);
    const now = T0 + 60 * 60_000;
    const options = { retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: SOLD, now: () => now };
    const memory = createMemoryHistory({ ...options, maxTransactions: 1_000 });
    const events: TransactionUpdateEvent[] = Array.from({ length: 12 }, (_, i) =>
      event(`t${i % 5}`, ['pending', 'completed', 'failed'][i % 3]!, T0 + i * 7_000, `e${i}`, 1 + (i % 4), 1 + (i % 2)),
    );
    for (const e of events) memory.apply(e);
    const records = (await memory.records(DEFAULT_ACCOUNT, ids)).filter((r): r is HistoryRecord => r !== undefined);
    await writeFirstSchema(pool, records, T0);

    expect(await migrate(database.url, logger)).toEqual(LATER);
    const store = createPostgresHistory(pool, { ...options, sweepEveryMs: 3_600_000 });
    ctx.onTestFinished(() => store.close());
    await expectAlike(store, memory, DEFAULT_ACCOUNT, now);
    await expectAlike(store, memory, 'acme', now);
    expect(await store.coveredSince('acme')).toBe(T0);

    // Applying on: a default account's record moved, one of a new account (one id already held by the default account), a payment.
    const more = [
      event('t1', 'completed', T0 + 100_000, 'm1', 3),
      { ...event('t1', 'pending', T0 + 90_000, 'm2', 2), account: 'acme' },
      event('t5', 'completed', T0 + 110_000, 'm3'),
    ];
    for (const e of more) {
      await store.apply(e);
      memory.apply(e);
    }
    const note = { account: DEFAULT_ACCOUNT, transactionId: 't2', fields: ['status'], at: T0 + 115_000 };
    expect(await store.notePayment(note)).toBe(await memory.notePayment(note));
    const withoutSeq = (store: HistoryStore, account: string) =>
      store
        .records(account, ids)
        .then((rs) => rs.map((r) => r && { ...r, latest: r.latest[0], entries: r.entries.map(([t, , s, e]) => [t, s, e]) }));
    expect(await withoutSeq(store, DEFAULT_ACCOUNT)).toEqual(await withoutSeq(memory, DEFAULT_ACCOUNT));
    expect(await withoutSeq(store, 'acme')).toEqual(await withoutSeq(memory, 'acme'));
    for (const account of [DEFAULT_ACCOUNT, 'acme']) {
      const query = statsQuery(account, { since: new Date(T0 - DAY), until: new Date(T0 + DAY), interval: 'HOUR' }, now);
      expect(withoutCurrencies(await store.stats(query)), account).toEqual(withoutCurrencies(await memory.stats(query)));
      expect((await store.recent(recentQuery(account, { first: 100 }))).totalCount).toBe(
        (await memory.recent(recentQuery(account, { first: 100 }))).totalCount,
      );
    }
  });

  it("goes back down to the first schema keeping the default account's rows, and up again", async (ctx) => {
    const { database, logger, pool } = await firstSchemaDatabase(ctx);
    const memory = createMemoryHistory({
      maxTransactions: 100,
      retentionMs: WEEK,
      defaultCurrency: 'EUR',
      soldStatuses: SOLD,
      now: () => T0,
    });
    memory.apply(event('t1', 'completed', T0, 'e1'));
    await writeFirstSchema(pool, (await memory.records(DEFAULT_ACCOUNT, ['t1'])) as HistoryRecord[], T0);
    expect(await migrate(database.url, logger)).toEqual(LATER);
    const store = createPostgresHistory(pool, {
      retentionMs: WEEK,
      defaultCurrency: 'EUR',
      soldStatuses: SOLD,
      now: () => T0,
      sweepEveryMs: 3_600_000,
    });
    ctx.onTestFinished(() => store.close());
    await store.apply({ ...event('t1', 'completed', T0, 'e1'), account: 'acme' });

    expect((await migrateBy(database.url, 'down', LATER.length)).map((m) => m.name)).toEqual([...LATER].reverse());
    const { rows } = await pool.query<{ transaction_id: string }>('SELECT transaction_id FROM history_transactions');
    expect(rows).toEqual([{ transaction_id: 't1' }]);
    const columns = await pool.query(
      "SELECT table_name FROM information_schema.columns WHERE column_name = 'account' AND table_name LIKE 'history\\_%'",
    );
    expect(columns.rows).toEqual([]);
    expect(await migrate(database.url, logger)).toEqual(LATER);
    expect((await store.records(DEFAULT_ACCOUNT, ['t1']))[0]?.status).toBe('completed');
  });
});
