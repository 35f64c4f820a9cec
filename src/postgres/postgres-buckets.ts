import type { Pool, PoolClient } from 'pg';
import { contributionOf, currencyOfRecord, type HistoryRecord, type SoldStatuses } from '../history/history-record.js';
import {
  bucketStart,
  currencyStats,
  increments,
  INTERVAL_MS,
  LEVEL_OF,
  LEVELS,
  productTotals,
  shownName,
  sumsOf,
  summarize,
  type BucketFields,
  type CurrencySums,
  type ProductSums,
  type TransactionStats,
} from '../history/history-stats.js';
import { MAX_TOP_PRODUCTS } from '../history/history-queries.js';
import type { StatsQuery } from '../history/history-store.js';

/*
 * The PostgreSQL history's running sums (tables: migrations/): what a record
 * adds to or takes back from the minute, hour and day of its last update, as
 * history-stats.ts `increments` says, written as rows; and the statistics of
 * a range read back through history-stats.ts `summarize`. Per-status fields
 * and products are apart, so a range's intervals never read its products, and
 * a range's products are summed from the coarsest buckets that cover it (whole
 * days, then hours, then minutes at its ends): a week of hours reads about
 * nine buckets per product, not 168. Every row is one account's, and every
 * statement names the account it reads or writes (keys lead with it).
 */

type Total = [account: string, level: string, start: number, field: string, by: number];
type ProductChange = [
  account: string,
  level: string,
  start: number,
  productId: string,
  quantity: number,
  amount: number,
  name: string | null,
  nameSeq: number | null,
];
type CurrencyProductChange = [
  account: string,
  level: string,
  start: number,
  currency: string,
  productId: string,
  quantity: number,
  amount: number,
];

/** Rows of the three tables, summed per row. */
interface RowSums {
  totals: Map<string, Total>;
  products: Map<string, ProductChange>;
  /** A product's sales in one currency (the Q: and A: fields), named by the products table. */
  currencyProducts: Map<string, CurrencyProductChange>;
}

const rowSums = (): RowSums => ({ totals: new Map(), products: new Map(), currencyProducts: new Map() });

/** Splits `EUR:<productId>` (a currency is three letters: contract/currency.ts). */
const currencyAndProduct = (name: string): [string, string] => [name.slice(0, name.indexOf(':')), name.slice(name.indexOf(':') + 1)];

/**
 * Adds what the account's `record` adds to (sign 1) or takes back from (sign −1) the minute, hour and day of its last
 * update; `seq` orders the names it writes. Keys join their parts with NUL, which no account name holds.
 */
function addChanges(
  into: RowSums,
  account: string,
  record: HistoryRecord,
  sign: 1 | -1,
  sold: SoldStatuses,
  defaultCurrency: string,
  seq: number,
): void {
  const contribution = contributionOf(record.status, record.products, sold, currencyOfRecord(record, defaultCurrency));
  for (const [level, width] of LEVELS) {
    const start = bucketStart(record.lastUpdated, width);
    const product = (productId: string) => {
      const key = `${account}\u0000${level}\u0000${start}\u0000${productId}`;
      let row = into.products.get(key);
      if (!row) into.products.set(key, (row = [account, level, start, productId, 0, 0, null, null]));
      return row;
    };
    for (const [field, by] of increments(contribution, sign)) {
      if (field.startsWith('q:')) product(field.slice(2))[4] += by;
      else if (field.startsWith('a:')) product(field.slice(2))[5] += by;
      else if (field.startsWith('Q:') || field.startsWith('A:')) {
        const [currency, productId] = currencyAndProduct(field.slice(2));
        const key = `${account}\u0000${level}\u0000${start}\u0000${currency}\u0000${productId}`;
        let row = into.currencyProducts.get(key);
        if (!row) into.currencyProducts.set(key, (row = [account, level, start, currency, productId, 0, 0]));
        row[field[0] === 'Q' ? 5 : 6] += by;
      } else {
        const key = `${account}\u0000${level}\u0000${start}\u0000${field}`;
        const row = into.totals.get(key);
        if (row) row[4] += by;
        else into.totals.set(key, [account, level, start, field, by]);
      }
    }
    // As in process: a sold contribution names its products (the p: fields); of two names, the later change's (within one, the last
    // line's).
    if (sign > 0 && contribution.sold) {
      for (const [productId, name] of contribution.products) {
        const row = product(productId);
        if (row[7] === null || seq >= row[7]) [row[6], row[7]] = [name, seq];
      }
    }
  }
}

/** In key order, so that concurrent writers lock rows in one order. */
const sorted = <T>(map: Map<string, T>) => [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
/** The rows' first `count` fields as arrays, one per field: a statement's `unnest` parameters. */
const columns = <T extends unknown[]>(rows: T[], count: number) =>
  Array.from({ length: count }, (_, index) => rows.map((row) => row[index]));

/**
 * What one database transaction's changes of records do to the bucket rows, gathered and then
 * written in six statements at most whatever their number. A record as it was stored is taken back
 * only from rows that exist (a bucket already past retention keeps no negative sums); a record
 * made earlier in the same transaction is taken back from what it added, so the sums come out
 * as if each change had been written on its own.
 */
export interface BucketChanges {
  /**
   * Of the account's records, `previous` taken back (`stored`: as read from the table, else made by an earlier change here), `record`
   * added.
   */
  change(account: string, previous: HistoryRecord | undefined, record: HistoryRecord | undefined, seq: number, stored: boolean): void;
  /** Writes the gathered rows, marked as changed at `at` (retention counts from it). */
  write(client: PoolClient, at: number): Promise<void>;
}

export function bucketChanges(sold: SoldStatuses, defaultCurrency: string): BucketChanges {
  const takenBack = rowSums();
  const added = rowSums();
  return {
    change(account, previous, record, seq, stored) {
      if (previous) addChanges(stored ? takenBack : added, account, previous, -1, sold, defaultCurrency, seq);
      if (record) addChanges(added, account, record, 1, sold, defaultCurrency, seq);
    },
    async write(client, at) {
      // Given to the connection together: the pool's connections pipeline (postgres-database.ts), so they reach the
      // database at once instead of each after the answer to the one before.
      const sent: Array<Promise<unknown>> = [];
      const back = {
        totals: sorted(takenBack.totals),
        products: sorted(takenBack.products),
        currencyProducts: sorted(takenBack.currencyProducts),
      };
      if (back.totals.length > 0) {
        sent.push(
          client.query(
            `UPDATE history_bucket_totals b SET value = b.value + u.by, touched_at = $6
             FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[]) AS u(account, level, start, field, by)
            WHERE b.account = u.account AND b.level = u.level AND b.start = u.start AND b.field = u.field`,
            [...columns(back.totals, 5), at],
          ),
        );
      }
      if (back.products.length > 0) {
        sent.push(
          client.query(
            `UPDATE history_bucket_products b SET quantity = b.quantity + u.quantity, amount = b.amount + u.amount, touched_at = $7
             FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[]) ` +
              `AS u(account, level, start, product_id, quantity, amount)
            WHERE b.account = u.account AND b.level = u.level AND b.start = u.start AND b.product_id = u.product_id`,
            [...columns(back.products, 6), at],
          ),
        );
      }
      if (back.currencyProducts.length > 0) {
        sent.push(
          client.query(
            `UPDATE history_bucket_currency_products b SET quantity = b.quantity + u.quantity, amount = b.amount + u.amount, touched_at = $8
             FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::bigint[]) ` +
              `AS u(account, level, start, currency, product_id, quantity, amount)
            WHERE b.account = u.account AND b.level = u.level AND b.start = u.start ` +
              `AND b.currency = u.currency AND b.product_id = u.product_id`,
            [...columns(back.currencyProducts, 7), at],
          ),
        );
      }
      const currencyProducts = sorted(added.currencyProducts);
      if (currencyProducts.length > 0) {
        sent.push(
          client.query(
            `INSERT INTO history_bucket_currency_products (account, level, start, currency, product_id, quantity, amount, touched_at)
             SELECT u.account, u.level, u.start, u.currency, u.product_id, u.quantity, u.amount, $8
               FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::bigint[]) ` +
              `AS u(account, level, start, currency, product_id, quantity, amount)
             ON CONFLICT (account, level, start, currency, product_id) DO UPDATE
               SET quantity = history_bucket_currency_products.quantity + excluded.quantity,
                   amount = history_bucket_currency_products.amount + excluded.amount,
                   touched_at = excluded.touched_at`,
            [...columns(currencyProducts, 7), at],
          ),
        );
      }
      const totals = sorted(added.totals);
      if (totals.length > 0) {
        sent.push(
          client.query(
            `INSERT INTO history_bucket_totals (account, level, start, field, value, touched_at)
             SELECT u.account, u.level, u.start, u.field, u.by, $6 ` +
              `FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[]) AS u(account, level, start, field, by)
             ON CONFLICT (account, level, start, field) DO UPDATE ` +
              `SET value = history_bucket_totals.value + excluded.value, touched_at = excluded.touched_at`,
            [...columns(totals, 5), at],
          ),
        );
      }
      const products = sorted(added.products);
      if (products.length > 0) {
        sent.push(
          client.query(
            `INSERT INTO history_bucket_products (account, level, start, product_id, quantity, amount, name, name_seq, touched_at)
           SELECT u.account, u.level, u.start, u.product_id, u.quantity, u.amount, u.name, u.name_seq, $9
             FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::text[], $8::bigint[]) ` +
              `AS u(account, level, start, product_id, quantity, amount, name, name_seq)
           ON CONFLICT (account, level, start, product_id) DO UPDATE
             SET quantity = history_bucket_products.quantity + excluded.quantity,
                 amount = history_bucket_products.amount + excluded.amount,
                 name = CASE WHEN excluded.name_seq > coalesce(history_bucket_products.name_seq, -1) ` +
              `THEN excluded.name ELSE history_bucket_products.name END,
                 name_seq = greatest(excluded.name_seq, history_bucket_products.name_seq),
                 touched_at = excluded.touched_at`,
            [...columns(products, 8), at],
          ),
        );
      }
      await Promise.all(sent);
    },
  };
}

/**
 * The account's rows of one covering bucket range `c`, read by the primary key (`account`: how the statement names
 * the account's parameter). `OFFSET 0` keeps the planner from joining the ranges to the whole table (a hash join over
 * a scan of every row: 90 ms at a week of 2,000 products, against 27 ms for three index ranges).
 */
const perBucket = (table: string, fields: string, account: string) =>
  `SELECT ${fields} FROM ${table} x WHERE x.account = ${account} ` +
  `AND x.level = c.level AND x.start >= c.since AND x.start < c.until OFFSET 0`;

/** How many of a range's newest buckets are read whole for the products' names (one probe each for products not sold in them). */
const NAMED_FROM_LAST = 3;

/** Buckets of one level from `from` to `to`, added (1) or taken away (−1). */
export type Piece = [level: string, from: number, to: number, sign: 1 | -1];

/**
 * Few buckets whose signed sum is exactly `since`–`until` (both aligned to a minute at least), coarsest first: whole
 * days, then for a partial day either its hours or the whole day less the hours outside the range, whichever reads
 * fewer (less when the hours outside are later than `now`: there is nothing there yet), and so on down to minutes.
 * A day's sums are the sums of its hours exactly (each change writes all three levels; a bucket row is deleted only
 * once no record in it is left), so a week by hour reads about 8 days and 12 hours per product, not 168 hours.
 */
export function coveringBuckets(since: number, until: number, now = Number.POSITIVE_INFINITY): Piece[] {
  const out: Piece[] = [];
  const cover = (a: number, b: number, index: number, sign: 1 | -1): void => {
    if (a >= b) return;
    const [level, width] = LEVELS[index]!;
    if (index === 0) {
      out.push([level, a, b, sign]);
      return;
    }
    const from = Math.ceil(a / width) * width;
    const to = Math.floor(b / width) * width;
    // Inside one bucket: its finer ones.
    if (from > to) return cover(a, b, index - 1, sign);
    if (from < to) out.push([level, from, to, sign]);
    const ragged = (inside: [number, number], bucket: [number, number], outside: [number, number], later: boolean) => {
      const wide = (range: [number, number]) => range[1] - range[0];
      if (wide(outside) < wide(inside) || (later && outside[0] >= now)) {
        out.push([level, bucket[0], bucket[1], sign]);
        cover(outside[0], outside[1], index - 1, sign === 1 ? -1 : 1);
      } else cover(inside[0], inside[1], index - 1, sign);
    };
    if (a < from) ragged([a, from], [from - width, from], [from - width, a], false);
    if (to < b) ragged([to, b], [to, to + width], [b, to + width], true);
  };
  cover(since, until, LEVELS.length - 1, 1);
  return out;
}

/**
 * The CTE `sums`: quantity and amount of each `key` (columns of `table`) over the covering buckets, those with a sale
 * left. `perCurrency` adds the CTE `currencies`, those the range's transactions are in (its intervals' N: fields), and
 * sums only when they are more than one (a condition PostgreSQL tests once, before it reads a bucket): in one currency a
 * product's sales are its sales overall, which readStats reads anyway. The parameters are readStats'.
 */
const summed = (table: string, key: string, perCurrency = false) =>
  `WITH covering AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $8::int[]) AS c(level, since, until, sign))
   ${
     perCurrency
       ? `, currencies AS (SELECT DISTINCT split_part(field, ':', 2) AS currency FROM history_bucket_totals
            WHERE account = $9 AND level = $4 AND start >= $5 AND start < $6 AND field LIKE 'N:%' AND value > 0)`
       : ''
   }
   , sums AS (
     SELECT ${key}, sum(c.sign * p.quantity) AS quantity, sum(c.sign * p.amount) AS amount
       FROM covering c CROSS JOIN LATERAL (${perBucket(table, `${key}, quantity, amount`, '$9')}) p
      ${perCurrency ? 'WHERE (SELECT count(*) FROM currencies) > 1' : ''}
      GROUP BY ${key} HAVING sum(c.sign * p.quantity) > 0 OR sum(c.sign * p.amount) > 0)`;

/**
 * The products of `sums` a caller can ask for: those ranked within the first MAX_TOP_PRODUCTS (`$10`) by quantity then
 * amount, or by amount then quantity. `rank()` keeps a product tied with the last one, so that the caller's own order,
 * which ends on the id, picks the same ones as from every product. `partition`, when set, ranks within each of its values.
 */
const ranked = (sums: string, partition = '') =>
  `SELECT * FROM (SELECT s.*, rank() OVER (${partition} ORDER BY quantity DESC, amount DESC) AS by_quantity, ` +
  `rank() OVER (${partition} ORDER BY amount DESC, quantity DESC) AS by_amount FROM ${sums} s) r ` +
  'WHERE by_quantity <= $10 OR by_amount <= $10';

/**
 * The products of the CTE `listed` (a `product_id` column) with their names, as in process: as in the newest bucket of the range
 * (at its interval) that names them, found among the last few buckets for a product sold lately, else by one index probe. The
 * parameters are readStats'.
 */
const withNames = (fields: string, also = '') =>
  `, newest AS (
     SELECT DISTINCT ON (product_id) product_id, name FROM history_bucket_products
      WHERE account = $9 AND level = $4 AND start >= greatest($5::bigint, $7::bigint) AND start < $6 AND name IS NOT NULL
        AND product_id IN (SELECT product_id FROM listed)
      ORDER BY product_id, start DESC)
   SELECT json_agg(json_build_array(${fields}, coalesce(n.name, (SELECT x.name FROM history_bucket_products x
            WHERE x.account = $9 AND x.level = $4 AND x.product_id = l.product_id AND x.start >= $5 AND x.start < $6
              AND x.name IS NOT NULL ORDER BY x.start DESC LIMIT 1)))) AS products${also}
     FROM listed l LEFT JOIN newest n ON n.product_id = l.product_id`;

/**
 * The statistics of a range of the query's account: its intervals from per-status rows, its products from the buckets that cover it.
 * Of the products, only those a caller can ask for are read, overall and in each currency (`ranked`), and in each currency too
 * every product sold in more than one, which is what tells whether a product's amount adds currencies together: a week of
 * 2,000 products is 200-odd of them. The three statements run at once, and each answers one row of JSON (`json_agg`):
 * node-postgres' parsing of thousands of rows cost the event loop more than the database spent finding them, where
 * `JSON.parse` of one text does not.
 */
export async function readStats(pool: Pool, query: StatsQuery, now: number): Promise<TransactionStats> {
  const width = INTERVAL_MS[query.interval];
  const level = LEVEL_OF[query.interval];
  const covering = coveringBuckets(query.since, query.until, now);
  const parameters = [
    covering.map((c) => c[0]),
    covering.map((c) => c[1]),
    covering.map((c) => c[2]),
    level,
    query.since,
    query.until,
    query.until - NAMED_FROM_LAST * width,
    covering.map((c) => c[3]),
    query.account,
    MAX_TOP_PRODUCTS,
  ];
  const [totals, overall, inCurrencies] = await Promise.all([
    // Each interval's fields as one object, as the in-process buckets hold them.
    pool.query<{ buckets: Array<[start: number, fields: BucketFields]> | null }>(
      `SELECT json_agg(json_build_array(start, fields)) AS buckets FROM (
         SELECT start, json_object_agg(field, value) AS fields FROM history_bucket_totals
          WHERE account = $1 AND level = $2 AND start >= $3 AND start < $4 AND value <> 0 GROUP BY start) b`,
      [query.account, level, query.since, query.until],
    ),
    pool.query<{ products: Array<[productId: string, quantity: number, amount: number, name: string | null]> | null }>(
      `${summed('history_bucket_products', 'product_id')}
       , listed AS (${ranked('sums')})
       ${withNames('l.product_id, l.quantity, l.amount')}`,
      parameters,
    ),
    pool.query<{
      products: Array<[currency: string, productId: string, quantity: number, amount: number, name: string | null]> | null;
      only: string | null;
    }>(
      `${summed('history_bucket_currency_products', 'currency, product_id', true)}
       , listed AS (
         SELECT currency, product_id, quantity, amount FROM (${ranked('sums', 'PARTITION BY currency')}) t
         UNION SELECT currency, product_id, quantity, amount FROM sums
          WHERE product_id IN (SELECT product_id FROM sums WHERE amount <> 0 GROUP BY product_id HAVING count(*) > 1))
       ${withNames('l.currency, l.product_id, l.quantity, l.amount', ', (SELECT min(currency) FROM currencies HAVING count(*) = 1) AS only')}`,
      parameters,
    ),
  ]);
  const buckets: BucketFields[] = Array.from({ length: (query.until - query.since) / width }, () => ({}));
  for (const [start, fields] of totals.rows[0]?.buckets ?? []) buckets[(start - query.since) / width] = fields;
  const names = new Map<string, string | null>();
  const products = new Map<string, ProductSums>();
  for (const [productId, quantity, amount, name] of overall.rows[0]?.products ?? []) {
    products.set(productId, { name, quantity, amount });
    names.set(productId, shownName(name));
  }
  const stats = summarize(query.since, query.until, query.interval, buckets);
  // The per-currency counts and sums come from the intervals' rows (summarize); their products from the covering buckets.
  const currencies = new Map<string, CurrencySums>();
  for (const entry of stats.byCurrency) {
    const currency = sumsOf(currencies, entry.currency);
    for (const status of entry.byStatus) {
      currency.counts.set(status.status, status.count);
      currency.totals.set(status.status, Math.round(status.total * 1_000_000));
    }
    currency.sold = Math.round(entry.totalSold * 1_000_000);
  }
  const { products: inCurrency, only } = inCurrencies.rows[0] ?? { products: null, only: null };
  for (const [currency, productId, quantity, amount, name] of inCurrency ?? []) {
    sumsOf(currencies, currency).products.set(productId, { quantity, amount });
    names.set(productId, shownName(name));
  }
  if (only !== null)
    for (const [productId, { quantity, amount }] of products) sumsOf(currencies, only).products.set(productId, { quantity, amount });
  return { ...stats, products: productTotals(products), byCurrency: currencyStats(currencies, names) };
}

/** Adds a statement's parameter and says how the statement names it (`$n`). */
export type Parameter = (value: unknown) => string;

/**
 * A scalar subquery: transactions whose last update is in `since`–`until` (aligned to a minute), of these statuses
 * (null: all), as the buckets count them; part of a larger statement, so that a page and its count are one round trip.
 * `account`: how the statement names the account's parameter.
 */
export function countInBucketsSql(
  parameter: Parameter,
  account: string,
  since: number,
  until: number,
  now: number,
  statuses: readonly string[] | null,
): string {
  const covering = coveringBuckets(since, until, now);
  const fields = statuses && statuses.map((status) => `n:${status}`);
  const column = (k: number) => parameter(covering.map((c) => c[k]));
  return (
    `(SELECT coalesce(sum(c.sign * t.value), 0) ` +
    `FROM unnest(${column(0)}::text[], ${column(1)}::bigint[], ${column(2)}::bigint[], ${column(3)}::int[]) AS c(level, since, until, sign)
       CROSS JOIN LATERAL (${perBucket('history_bucket_totals', 'field, value', account)}) t
      WHERE ${fields ? `t.field = ANY(${parameter(fields)}::text[])` : "t.field LIKE 'n:%'"})`
  );
}

/** Rows deleted per statement, so that a sweep after a long pause never runs into the statement timeout. */
const SWEEP_ROWS = 5_000;

/** Deletes bucket rows nothing changed since `horizon`, of every account (their records went before them). */
export async function sweepBuckets(pool: Pool, horizon: number): Promise<void> {
  for (const table of ['history_bucket_totals', 'history_bucket_products', 'history_bucket_currency_products']) {
    const batch = `DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE touched_at < $1 LIMIT ${SWEEP_ROWS})`;
    let deleted = SWEEP_ROWS;
    while (deleted === SWEEP_ROWS) deleted = (await pool.query(batch, [horizon])).rowCount ?? 0;
  }
}
