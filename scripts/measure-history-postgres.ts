import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import type { TransactionUpdateEvent } from '../src/events/normalize.js';
import { DEFAULT_ACCOUNT } from '../src/contract/accounts.js';
import { recentQuery, statsQuery } from '../src/history/history-queries.js';
import { createLogger } from '../src/logging/logger.js';
import { createPostgresPool, migrate } from '../src/postgres/postgres-database.js';
import { createPostgresHistory } from '../src/postgres/postgres-history.js';

/*
 * `tsx scripts/measure-history-postgres.ts [sizes] [products]` (sizes: 10000,300000; products: 2000):
 * what the PostgreSQL history costs at a size, on a database of its own
 * (MEASURE_DATABASE_URL names the server, else postgres://postgres@127.0.0.1:5432/postgres),
 * dropped after. Each size is filled in bulk by SQL (records over the last
 * seven days and their sums, as the store would have written them), then:
 * an event's apply (new transactions and updates of existing ones, one at a
 * time), `recent(first: 50)`, a 7-day hourly `stats` with every product, the
 * event loop's longest delay during the reads, and bytes per transaction
 * (the history's tables and indexes). Figures to compare across sizes: run it
 * on a quiet machine; the bench (S10) is where they are kept.
 */

const SIZES = (process.argv[2] ?? '10000,300000').split(',').map(Number);
const PRODUCTS = Number(process.argv[3] ?? 2_000);
const ADMIN = process.env.MEASURE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Math.floor(Date.now() / HOUR) * HOUR;

const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)] ?? Number.NaN;
const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
const ms = (value: number) => `${value.toFixed(2)} ms`;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN });
  await client.connect();
  await client.query(sql).finally(() => client.end());
}

/**
 * Fills `size` transactions over the last week, sold, one product line each, and the sums they make (no statement timeout: a bulk load).
 */
async function fill(pool: pg.Client, size: number): Promise<void> {
  await pool.query(
    `INSERT INTO history_transactions (transaction_id, status, last_updated, touched_at, record)
     SELECT 'tx-' || g, s.status, s.at, $2::bigint,
            json_build_object('transactionId', 'tx-' || g, 'transaction', ` +
      `json_build_object('transactionId', 'tx-' || g, 'status', s.status),
              'status', s.status, 'products', json_build_array(json_build_object('productId', 'p' || (g % $3), ` +
      `'productName', 'Product ' || (g % $3), 'productPrice', 1.5, 'quantity', 1)),
              'firstSeen', s.at, 'lastUpdated', s.at, 'latest', json_build_array(s.at, g), ` +
      `'entries', json_build_array(json_build_array(s.at, g, s.status, 'e' || g)), 'payments', json_build_array())
       FROM generate_series(1, $1::int) g,
            LATERAL (SELECT CASE WHEN g % 5 = 0 THEN 'pending' ELSE 'completed' END AS status, ` +
      `$2::bigint - (g::bigint * ${7 * DAY - 1}) / $1::bigint AS at) s`,
    [size, NOW, PRODUCTS],
  );
  for (const [level, width] of [
    ['m', 60_000],
    ['h', HOUR],
    ['d', DAY],
  ] as const) {
    await pool.query(
      `INSERT INTO history_bucket_totals (level, start, field, value, touched_at)
       SELECT $1, last_updated / $2 * $2, f.field, sum(f.value), $3::bigint FROM history_transactions,
              LATERAL (VALUES ('n:' || status, 1), ('t:' || status, 1500000), ('s', 1500000)) AS f(field, value)
        GROUP BY 2, 3`,
      [level, width, NOW],
    );
    await pool.query(
      `INSERT INTO history_bucket_products (level, start, product_id, quantity, amount, name, name_seq, touched_at)
       SELECT $1, last_updated / $2 * $2, record->'products'->0->>'productId', count(*) * 1000000, count(*) * 1500000, ` +
        `min(record->'products'->0->>'productName'), 0, $3::bigint
         FROM history_transactions GROUP BY 2, 3`,
      [level, width, NOW],
    );
  }
  await pool.query('ANALYZE');
}

function event(id: string, n: number): TransactionUpdateEvent {
  const products = [{ productId: `p${n % PRODUCTS}`, productName: `Product ${n % PRODUCTS}`, productPrice: 1.5, quantity: 1 }];
  const at = new Date(NOW - (n % 600) * 1_000).toISOString();
  return {
    eventId: `m-${n}`,
    type: 'transaction.update',
    format: 'ENVELOPED',
    receivedAt: at,
    occurredAt: at,
    transactionId: id,
    status: n % 2 ? 'completed' : 'pending',
    products,
    transaction: { transactionId: id, products },
    raw: {},
  };
}

async function measure(size: number): Promise<void> {
  const name = `vg_measure_${randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const logger = createLogger('warn');
  const pool = createPostgresPool(url.toString(), logger);
  const history = createPostgresHistory(pool, {
    retentionMs: 7 * DAY + HOUR,
    defaultCurrency: 'EUR',
    soldStatuses: ['completed'],
    sweepEveryMs: DAY,
    now: () => NOW,
  });
  try {
    await migrate(url.toString(), logger);
    await history.start();
    const loader = new pg.Client({ connectionString: url.toString() });
    await loader.connect();
    await fill(loader, size).finally(() => loader.end());
    const applies: number[] = [];
    for (let n = 0; n < 500; n += 1) {
      const started = performance.now();
      await history.apply(event(n % 2 ? `tx-${1 + ((n * 7919) % size)}` : `new-${n}`, n));
      applies.push(performance.now() - started);
    }
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const recent: number[] = [];
    for (let n = 0; n < 200; n += 1) {
      const started = performance.now();
      await history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 50 }));
      recent.push(performance.now() - started);
    }
    const stats: number[] = [];
    const week = statsQuery(DEFAULT_ACCOUNT, { since: new Date(NOW - 7 * DAY + HOUR), until: new Date(NOW + HOUR), interval: 'HOUR' }, NOW);
    for (let n = 0; n < 30; n += 1) {
      const started = performance.now();
      await history.stats(week);
      stats.push(performance.now() - started);
    }
    delay.disable();
    const { rows } = await pool.query<{ bytes: string }>(
      `SELECT sum(pg_total_relation_size(t)) AS bytes ` +
        `FROM unnest(array['history_transactions', 'history_bucket_totals', 'history_bucket_products']) AS t`,
    );
    const line = [
      `${size} transactions, ${PRODUCTS} products:`,
      `apply mean ${ms(mean(applies))} p99 ${ms(p99(applies))};`,
      `recent(first: 50) p99 ${ms(p99(recent))};`,
      `7-day HOUR stats p99 ${ms(p99(stats))};`,
      `event loop max delay ${ms(delay.max / 1e6)};`,
      `${Math.round(Number(rows[0]!.bytes) / size)} B per transaction`,
    ];
    process.stdout.write(`${line.join(' ')}\n`);
  } finally {
    history.close();
    await pool.end();
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

for (const size of SIZES) await measure(size);
