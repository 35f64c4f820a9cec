import type { Pool, PoolClient } from 'pg';
import { contributionOf, type HistoryRecord, type SoldStatuses } from '../history/history-record.js';
import { bucketStart, increments, INTERVAL_MS, LEVEL_OF, LEVELS, summarize, type BucketFields, type TransactionStats } from '../history/history-stats.js';
import type { StatsQuery } from '../history/history-store.js';

/*
 * The PostgreSQL history's running sums (tables: migrations/): what a record
 * adds to or takes back from the minute, hour and day of its last update, as
 * history-stats.ts `increments` says, written as rows; and the statistics of
 * a range read back through history-stats.ts `summarize`. Per-status fields
 * and products are apart, so a range's intervals never read its products, and
 * a range's products are summed from the coarsest buckets that cover it (whole
 * days, then hours, then minutes at its ends): a week of hours reads about
 * nine buckets per product, not 168.
 */

type Total = [level: string, start: number, field: string, by: number];
type ProductChange = [level: string, start: number, productId: string, quantity: number, amount: number, name: string | null];

/** The rows a record changes, summed per row and in key order (so concurrent writers lock rows in one order). */
function changesOf(record: HistoryRecord, sign: 1 | -1, sold: SoldStatuses): { totals: Total[]; products: ProductChange[] } {
  const contribution = contributionOf(record.status, record.products, sold);
  const totals = new Map<string, Total>();
  const products = new Map<string, ProductChange>();
  for (const [level, width] of LEVELS) {
    const start = bucketStart(record.lastUpdated, width);
    const product = (productId: string) => {
      const key = `${level}\u0000${start}\u0000${productId}`;
      let row = products.get(key);
      if (!row) products.set(key, (row = [level, start, productId, 0, 0, null]));
      return row;
    };
    for (const [field, by] of increments(contribution, sign)) {
      if (field.startsWith('q:')) product(field.slice(2))[3] += by;
      else if (field.startsWith('a:')) product(field.slice(2))[4] += by;
      else {
        const key = `${level}\u0000${start}\u0000${field}`;
        const row = totals.get(key);
        if (row) row[3] += by;
        else totals.set(key, [level, start, field, by]);
      }
    }
    // As in process: a sold contribution names its products (the p: fields).
    if (sign > 0 && contribution.sold) for (const [productId, name] of contribution.products) product(productId)[5] = name;
  }
  const sorted = <T>(map: Map<string, T>) => [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
  return { totals: sorted(totals), products: sorted(products) };
}

const column = <T extends unknown[], K extends number>(rows: T[], index: K) => rows.map((row) => row[index]);

/**
 * Takes `previous` back and adds `record`, at `at` (retention counts from it); `seq` orders
 * the product names this change writes against another change's.
 */
export async function writeBuckets(client: PoolClient, sold: SoldStatuses, previous: HistoryRecord | undefined, record: HistoryRecord | undefined, at: number, seq: number): Promise<void> {
  if (previous) {
    // Taken back only from rows that exist: a bucket already past retention keeps no negative sums.
    const { totals, products } = changesOf(previous, -1, sold);
    await client.query(
      `UPDATE history_bucket_totals b SET value = b.value + u.by, touched_at = $5
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) AS u(level, start, field, by)
        WHERE b.level = u.level AND b.start = u.start AND b.field = u.field`,
      [column(totals, 0), column(totals, 1), column(totals, 2), column(totals, 3), at],
    );
    if (products.length > 0) {
      await client.query(
        `UPDATE history_bucket_products b SET quantity = b.quantity + u.quantity, amount = b.amount + u.amount, touched_at = $6
           FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[]) AS u(level, start, product_id, quantity, amount)
          WHERE b.level = u.level AND b.start = u.start AND b.product_id = u.product_id`,
        [column(products, 0), column(products, 1), column(products, 2), column(products, 3), column(products, 4), at],
      );
    }
  }
  if (!record) return;
  const { totals, products } = changesOf(record, 1, sold);
  await client.query(
    `INSERT INTO history_bucket_totals (level, start, field, value, touched_at)
       SELECT u.level, u.start, u.field, u.by, $5 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) AS u(level, start, field, by)
       ON CONFLICT (level, start, field) DO UPDATE SET value = history_bucket_totals.value + excluded.value, touched_at = excluded.touched_at`,
    [column(totals, 0), column(totals, 1), column(totals, 2), column(totals, 3), at],
  );
  if (products.length === 0) return;
  await client.query(
    `INSERT INTO history_bucket_products (level, start, product_id, quantity, amount, name, name_seq, touched_at)
       SELECT u.level, u.start, u.product_id, u.quantity, u.amount, u.name, CASE WHEN u.name IS NULL THEN NULL ELSE $7::bigint END, $8
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[]) AS u(level, start, product_id, quantity, amount, name)
       ON CONFLICT (level, start, product_id) DO UPDATE
         SET quantity = history_bucket_products.quantity + excluded.quantity,
             amount = history_bucket_products.amount + excluded.amount,
             name = CASE WHEN excluded.name_seq > coalesce(history_bucket_products.name_seq, -1) THEN excluded.name ELSE history_bucket_products.name END,
             name_seq = greatest(excluded.name_seq, history_bucket_products.name_seq),
             touched_at = excluded.touched_at`,
    [column(products, 0), column(products, 1), column(products, 2), column(products, 3), column(products, 4), column(products, 5), seq, at],
  );
}

/**
 * The rows of one covering bucket range `c`, read by the primary key. `OFFSET 0` keeps the planner
 * from joining the ranges to the whole table (a hash join over a scan of every row: 90 ms at a
 * week of 2,000 products, against 27 ms for three index ranges).
 */
const perBucket = (table: string, columns: string) => `SELECT ${columns} FROM ${table} x WHERE x.level = c.level AND x.start >= c.since AND x.start < c.until OFFSET 0`;

/** How many of a range's newest buckets are read whole for the products' names (one probe each for products not sold in them). */
const NAMED_FROM_LAST = 3;

/** The coarsest buckets that cover `since`–`until` exactly (both aligned to a minute at least): [level, from, to). */
export function coveringBuckets(since: number, until: number): Array<[level: string, from: number, to: number]> {
  const out: Array<[string, number, number]> = [];
  let parts: Array<[number, number]> = [[since, until]];
  for (const [level, width] of [...LEVELS].reverse()) {
    const finer: Array<[number, number]> = [];
    for (const [a, b] of parts) {
      const from = Math.ceil(a / width) * width;
      const to = Math.floor(b / width) * width;
      if (from >= to) {
        finer.push([a, b]);
        continue;
      }
      out.push([level, from, to]);
      if (a < from) finer.push([a, from]);
      if (to < b) finer.push([to, b]);
    }
    parts = finer;
  }
  return out;
}

/** The statistics of a range: its intervals from per-status rows, its products from the buckets that cover it. */
export async function readStats(pool: Pool, query: StatsQuery): Promise<TransactionStats> {
  const width = INTERVAL_MS[query.interval];
  const level = LEVEL_OF[query.interval];
  const covering = coveringBuckets(query.since, query.until);
  const [totals, sums] = await Promise.all([
    pool.query<{ start: string; field: string; value: string }>(
      'SELECT start, field, value FROM history_bucket_totals WHERE level = $1 AND start >= $2 AND start < $3 AND value <> 0',
      [level, query.since, query.until],
    ),
    pool.query<{ product_id: string; quantity: string; amount: string; name: string | null }>(
      `WITH sums AS (
         SELECT p.product_id, sum(p.quantity) AS quantity, sum(p.amount) AS amount
           FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS c(level, since, until)
           CROSS JOIN LATERAL (${perBucket('history_bucket_products', 'product_id, quantity, amount')}) p
          GROUP BY p.product_id HAVING sum(p.quantity) > 0 OR sum(p.amount) > 0)
       , newest AS (
         SELECT DISTINCT ON (product_id) product_id, name FROM history_bucket_products
          WHERE level = $4 AND start >= greatest($5::bigint, $7::bigint) AND start < $6 AND name IS NOT NULL
          ORDER BY product_id, start DESC)
       SELECT s.product_id, s.quantity, s.amount,
              coalesce(n.name, (SELECT x.name FROM history_bucket_products x
                                 WHERE x.level = $4 AND x.product_id = s.product_id AND x.start >= $5 AND x.start < $6 AND x.name IS NOT NULL
                                 ORDER BY x.start DESC LIMIT 1)) AS name
         FROM sums s LEFT JOIN newest n ON n.product_id = s.product_id`,
      [covering.map((c) => c[0]), covering.map((c) => c[1]), covering.map((c) => c[2]), level, query.since, query.until, query.until - NAMED_FROM_LAST * width],
    ),
  ]);
  const buckets: BucketFields[] = Array.from({ length: (query.until - query.since) / width }, () => ({}));
  for (const row of totals.rows) {
    const fields = buckets[(Number(row.start) - query.since) / width];
    if (fields) fields[row.field] = Number(row.value);
  }
  // As in process, a product is named as in the newest bucket of the range (at its interval) that names it: found among the
  // last few buckets for a product sold lately, else by one index probe.
  const products: BucketFields = {};
  for (const row of sums.rows) {
    Object.assign(products, { [`q:${row.product_id}`]: Number(row.quantity), [`a:${row.product_id}`]: Number(row.amount) });
    if (row.name !== null) products[`p:${row.product_id}`] = row.name;
  }
  const stats = summarize(query.since, query.until, query.interval, buckets);
  // The products' own rule (what counts, names, millionths) is summarize's: given the range's sums as one bucket.
  return { ...stats, products: summarize(query.since, query.since + width, query.interval, [products]).products };
}

/** Transactions whose last update is in `since`–`until` (aligned to a minute), of these statuses (null: all), as the buckets count them. */
export async function countInBuckets(pool: Pool, since: number, until: number, statuses: readonly string[] | null): Promise<number> {
  const covering = coveringBuckets(since, until);
  const { rows } = await pool.query<{ n: string | null }>(
    `SELECT sum(t.value) AS n FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS c(level, since, until)
       CROSS JOIN LATERAL (${perBucket('history_bucket_totals', 'field, value')}) t
      WHERE CASE WHEN $4::text[] IS NULL THEN t.field LIKE 'n:%' ELSE t.field = ANY($4::text[]) END`,
    [covering.map((c) => c[0]), covering.map((c) => c[1]), covering.map((c) => c[2]), statuses && statuses.map((status) => `n:${status}`)],
  );
  return Number(rows[0]!.n ?? 0);
}

/** Rows deleted per statement, so that a sweep after a long pause never runs into the statement timeout. */
const SWEEP_ROWS = 5_000;

/** Deletes bucket rows nothing changed since `horizon` (their records went before them). */
export async function sweepBuckets(pool: Pool, horizon: number): Promise<void> {
  for (const table of ['history_bucket_totals', 'history_bucket_products']) {
    const batch = `DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE touched_at < $1 LIMIT ${SWEEP_ROWS})`;
    let deleted = SWEEP_ROWS;
    while (deleted === SWEEP_ROWS) deleted = (await pool.query(batch, [horizon])).rowCount ?? 0;
  }
}
