import type { Contribution } from './history-record.js';
import {
  addCurrencySums,
  byStatusOf,
  currencyTotals,
  INTERVAL_MS,
  LEVELS,
  rangeStats,
  sumsOf,
  type CurrencySums,
  type Interval,
  type ProductSums as RangeSums,
  type StatsBucket,
  type TransactionStats,
} from './history-stats.js';
import { fromMicro } from './history-record.js';

/*
 * The running sums of the in-process history, kept so that a long range reads
 * few of them: answers are exactly those of `summarize` over the same
 * contributions (history-stats.ts, which the Redis store uses), but
 *  - an interval's row reads only its per-status sums, never its products;
 *  - the range's products read whole days from day buckets (whole hours from
 *    hour buckets) and only the ragged ends at the interval's own level: a
 *    week by hour reads at most 6 days and 46 hours, not 168 hours, of
 *    products, and mostly 8 days: a partial day stands for its hours when
 *    those outside the range add nothing (before a week ago, past retention;
 *    after now, not there yet);
 *  - a product's name is the one of the latest bucket *of the query's level*
 *    that named it, as `summarize` reads it: each bucket keeps, per finer
 *    level, which of its sub-buckets named the product last, and that name.
 * A day's sums are the sums of its hours (every contribution goes to all
 * three levels at once, and a day goes with its hours and minutes: `sweep`).
 */

/** Level indexes, finest first (LEVELS). */
const LEVEL_INDEX: Record<Interval, number> = { MINUTE: 0, HOUR: 1, DAY: 2 };
const WIDTHS = LEVELS.map(([, width]) => width);

/** A product's sums in one bucket. Fixed fields rather than arrays keep the query's loop on one object shape. */
interface ProductSums {
  quantity: number;
  amount: number;
  /**
   * Per level at or finer than the bucket's (minute, hour, day): the start of the latest bucket of that level naming it (−∞: none), and
   * that name.
   */
  start0: number;
  name0: string;
  start1: number;
  name1: string;
  start2: number;
  name2: string;
}

function nameAt(sums: ProductSums, level: number): string | undefined {
  if (level === 0) return sums.start0 === -Infinity ? undefined : sums.name0;
  if (level === 1) return sums.start1 === -Infinity ? undefined : sums.name1;
  return sums.start2 === -Infinity ? undefined : sums.name2;
}

/** Names the product at each level up to `level` from a contribution whose buckets start at `starts`. */
function noteName(sums: ProductSums, level: number, starts: readonly number[], name: string): void {
  if (starts[0]! >= sums.start0) [sums.start0, sums.name0] = [starts[0]!, name];
  if (level >= 1 && starts[1]! >= sums.start1) [sums.start1, sums.name1] = [starts[1]!, name];
  if (level >= 2 && starts[2]! >= sums.start2) [sums.start2, sums.name2] = [starts[2]!, name];
}

interface Bucket {
  /** When a contribution last changed it (retention runs from it). */
  touchedAt: number;
  counts: Map<string, number>;
  totals: Map<string, number>;
  sold: number;
  products: Map<string, ProductSums>;
  /** The same sums per currency (products without names: a range names them as its products are named). */
  currencies: Map<string, CurrencySums>;
}

function add(map: Map<string, number>, key: string, by: number): void {
  const value = (map.get(key) ?? 0) + by;
  if (value === 0) map.delete(key);
  else map.set(key, value);
}

export interface MemoryBuckets {
  /** Adds a contribution to the minute, hour and day holding `time` (sign −1: takes it back). */
  contribute(time: number, contribution: Contribution, sign: 1 | -1, now: number): void;
  stats(since: number, until: number, interval: Interval): TransactionStats;
  /** Drops every day (with its hours and minutes) no contribution changed since `horizon`. */
  sweep(horizon: number): void;
  count(): number;
}

export function createMemoryBuckets(): MemoryBuckets {
  const levels = LEVELS.map(() => new Map<number, Bucket>());

  function contribute(time: number, contribution: Contribution, sign: 1 | -1, now: number): void {
    const starts = WIDTHS.map((width) => Math.floor(time / width) * width);
    for (let level = 0; level < levels.length; level += 1) {
      let bucket = levels[level]!.get(starts[level]!);
      if (!bucket) {
        // Taking back from a bucket already dropped (past retention) would leave negative sums.
        if (sign < 0) continue;
        bucket = { touchedAt: 0, counts: new Map(), totals: new Map(), sold: 0, products: new Map(), currencies: new Map() };
        levels[level]!.set(starts[level]!, bucket);
      }
      bucket.touchedAt = now;
      add(bucket.counts, contribution.status, sign);
      add(bucket.totals, contribution.status, sign * contribution.total);
      const money = sumsOf(bucket.currencies, contribution.currency);
      add(money.counts, contribution.status, sign);
      add(money.totals, contribution.status, sign * contribution.total);
      if (contribution.sold) money.sold += sign * contribution.total;
      if (contribution.sold) {
        for (const [productId, , quantity, amount] of contribution.products) {
          const sums = money.products.get(productId) ?? { quantity: 0, amount: 0 };
          sums.quantity += sign * quantity;
          sums.amount += sign * amount;
          if (sums.quantity === 0 && sums.amount === 0) money.products.delete(productId);
          else money.products.set(productId, sums);
        }
      }
      if (money.counts.size === 0 && money.sold === 0 && money.products.size === 0) bucket.currencies.delete(contribution.currency);
      if (!contribution.sold) continue;
      bucket.sold += sign * contribution.total;
      for (const [productId, name, quantity, amount] of contribution.products) {
        let sums = bucket.products.get(productId);
        if (!sums) {
          sums = { quantity: 0, amount: 0, start0: -Infinity, name0: '', start1: -Infinity, name1: '', start2: -Infinity, name2: '' };
          bucket.products.set(productId, sums);
        }
        sums.quantity += sign * quantity;
        sums.amount += sign * amount;
        // The name stays when the sums are taken back, as a bucket's `p:` field does.
        if (sign > 0) noteName(sums, level, starts, name);
      }
    }
  }

  function row(bucket: Bucket | undefined, start: number, width: number): StatsBucket {
    const byStatus = bucket ? byStatusOf(bucket.counts, bucket.totals) : [];
    return {
      start,
      end: start + width,
      count: byStatus.reduce((sum, s) => sum + s.count, 0),
      totalSold: fromMicro(bucket?.sold ?? 0),
      byStatus,
      byCurrency: bucket ? currencyTotals(bucket.currencies) : [],
    };
  }

  /** The buckets that tile [since, until) with the fewest, oldest first: whole days and hours where they fit. */
  function tiles(since: number, until: number, finest: number, fold = true): Array<Bucket | undefined> {
    const out: Array<Bucket | undefined> = [];
    let at = since;
    while (at < until) {
      let level = levels.length - 1;
      while (level > finest && !fits(at, level, until, finest, fold)) level -= 1;
      out.push(levels[level]!.get(bucketStartAt(at, level)));
      at = Math.min(bucketStartAt(at, level) + WIDTHS[level]!, until);
    }
    return out;
  }

  const bucketStartAt = (time: number, level: number) => time - (time % WIDTHS[level]!);

  /**
   * Whether the bucket of `level` holding `at` can stand for its part of the
   * range up to `until`: it lies inside, or (folding) what it holds outside
   * is empty (no bucket there: a contribution makes its minute, hour and day
   * at once). Today's day stands for its hours when none is later than the
   * range; the first day for its hours when those before the range are past
   * retention (their transactions left).
   */
  function fits(at: number, level: number, until: number, finest: number, fold: boolean): boolean {
    const start = bucketStartAt(at, level);
    const end = start + WIDTHS[level]!;
    if (!fold) return start === at && end <= until;
    return (start === at || empty(start, at, finest, false)) && (end <= until || empty(until, end, finest, true));
  }

  /**
   * Whether the buckets of [from, to) add nothing: none, or none with a
   * transaction in it (sums come back to exactly 0 when the last one leaves).
   * After the range, not even a product's name: the latest name would win.
   * Looked at without folding, so it never asks itself.
   */
  function empty(from: number, to: number, finest: number, namesToo: boolean): boolean {
    return tiles(from, to, finest, false).every(
      (bucket) => bucket === undefined || (bucket.counts.size === 0 && (!namesToo || bucket.products.size === 0)),
    );
  }

  function stats(since: number, until: number, interval: Interval): TransactionStats {
    const finest = LEVEL_INDEX[interval];
    const width = INTERVAL_MS[interval];
    const rows: StatsBucket[] = [];
    const allCounts = new Map<string, number>();
    const allTotals = new Map<string, number>();
    let sold = 0;
    const currencies = new Map<string, CurrencySums>();
    for (let start = since; start < until; start += width) {
      const bucket = levels[finest]!.get(start);
      rows.push(row(bucket, start, width));
      if (!bucket) continue;
      addCurrencySums(currencies, bucket.currencies, false);
      for (const [status, count] of bucket.counts) add(allCounts, status, count);
      for (const [status, total] of bucket.totals) add(allTotals, status, total);
      sold += bucket.sold;
    }
    const products = new Map<string, RangeSums>();
    for (const bucket of tiles(since, until, finest)) {
      if (!bucket) continue;
      for (const [productId, sums] of bucket.products) {
        let total = products.get(productId);
        if (!total) products.set(productId, (total = { name: null, quantity: 0, amount: 0 }));
        total.quantity += sums.quantity;
        total.amount += sums.amount;
        const name = nameAt(sums, finest);
        if (name !== undefined) total.name = name;
      }
      // A currency's products over the same tiles; its counts and sums came from the intervals' own buckets above.
      for (const [currency, money] of bucket.currencies) {
        const into = sumsOf(currencies, currency).products;
        for (const [productId, p] of money.products) {
          const total = into.get(productId) ?? { quantity: 0, amount: 0 };
          total.quantity += p.quantity;
          total.amount += p.amount;
          into.set(productId, total);
        }
      }
    }
    return rangeStats({ since, until, interval, buckets: rows, counts: allCounts, totals: allTotals, sold, products, currencies });
  }

  function sweep(horizon: number): void {
    const [minutes, hours, days] = levels as [Map<number, Bucket>, Map<number, Bucket>, Map<number, Bucket>];
    for (const [start, day] of days) {
      if (day.touchedAt >= horizon) continue;
      // Every contribution to an hour or minute of the day touched the day too: none is newer.
      days.delete(start);
      for (let hour = start; hour < start + INTERVAL_MS.DAY; hour += INTERVAL_MS.HOUR) hours.delete(hour);
      for (let minute = start; minute < start + INTERVAL_MS.DAY; minute += INTERVAL_MS.MINUTE) minutes.delete(minute);
    }
  }

  return { contribute, stats, sweep, count: () => levels.reduce((sum, level) => sum + level.size, 0) };
}
