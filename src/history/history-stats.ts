import { fromMicro, type Contribution } from './history-record.js';

/*
 * Statistics by interval, kept as running sums (never by reading records):
 * every transaction adds its contribution (history-record.ts) to the minute,
 * hour and day holding its last update, and takes it back when it moves. A
 * bucket is a flat map of fields, the same in process and as PostgreSQL rows:
 *   n:<status>  transactions       t:<status>  their total (millionths)
 *   s           total sold         q:<product> quantity sold   a:<product> amount sold
 *   p:<product> the product's name
 * and the same per currency, so that money is never added across currencies:
 *   N:<cur>:<status>  transactions     T:<cur>:<status>  their total
 *   S:<cur>           total sold       Q:<cur>:<product> A:<cur>:<product>  a product's sales in it
 * (a currency is three letters: contract/currency.ts).
 */

export type Interval = 'MINUTE' | 'HOUR' | 'DAY';

export const INTERVAL_MS: Record<Interval, number> = { MINUTE: 60_000, HOUR: 3_600_000, DAY: 86_400_000 };
/** The prefix of each level's buckets (in-process map keys, PostgreSQL's `level` column). */
export const LEVELS = [
  ['m', INTERVAL_MS.MINUTE],
  ['h', INTERVAL_MS.HOUR],
  ['d', INTERVAL_MS.DAY],
] as const;
export const LEVEL_OF: Record<Interval, string> = { MINUTE: 'm', HOUR: 'h', DAY: 'd' };

export const bucketStart = (time: number, width: number): number => Math.floor(time / width) * width;

export type BucketFields = Record<string, string | number>;

/** The key of each bucket of a range (level and start: `m1732400000000`), oldest first; a store adds its own prefix. */
export function bucketKeys({ since, until, interval }: { since: number; until: number; interval: Interval }): string[] {
  const width = INTERVAL_MS[interval];
  const keys: string[] = [];
  for (let start = since; start < until; start += width) keys.push(`${LEVEL_OF[interval]}${start}`);
  return keys;
}

/** The increments a contribution makes to a bucket (negated to take it back). */
export function increments(contribution: Contribution, sign: 1 | -1): Array<[field: string, by: number]> {
  const out: Array<[string, number]> = [
    [`n:${contribution.status}`, sign],
    [`t:${contribution.status}`, sign * contribution.total],
  ];
  const currency = contribution.currency;
  out.push([`N:${currency}:${contribution.status}`, sign], [`T:${currency}:${contribution.status}`, sign * contribution.total]);
  if (!contribution.sold) return out;
  out.push(['s', sign * contribution.total], [`S:${currency}`, sign * contribution.total]);
  for (const [productId, , quantity, amount] of contribution.products) {
    out.push(
      [`q:${productId}`, sign * quantity],
      [`a:${productId}`, sign * amount],
      [`Q:${currency}:${productId}`, sign * quantity],
      [`A:${currency}:${productId}`, sign * amount],
    );
  }
  return out;
}

export interface StatusTotal {
  status: string;
  count: number;
  total: number;
}

/** The transactions of one currency: amounts of different currencies are never added. */
export interface CurrencyTotal {
  currency: string;
  count: number;
  totalSold: number;
  byStatus: StatusTotal[];
}

/** A currency's part of a range, with what each product sold in it. */
export interface CurrencyStats extends CurrencyTotal {
  /**
   * As `TransactionStats.products`, in this currency; besides those a caller can ask for, every product sold in more than one
   * currency is here (what tells whether an overall amount adds currencies together).
   */
  products: ProductTotal[];
}

export interface StatsBucket {
  start: number;
  end: number;
  count: number;
  /** Summed across currencies (kept for the clients that read it); `byCurrency` is the figure to show. */
  totalSold: number;
  byStatus: StatusTotal[];
  byCurrency: CurrencyTotal[];
}

export interface ProductTotal {
  productId: string;
  productName: string | null;
  quantity: number;
  amount: number;
}

export interface TransactionStats {
  since: number;
  until: number;
  interval: Interval;
  buckets: StatsBucket[];
  count: number;
  totalSold: number;
  byStatus: StatusTotal[];
  /**
   * The products sold in the range, in no order (the caller takes the top): all of them, or at least every one ranked within the
   * first MAX_TOP_PRODUCTS by quantity or by amount, ties included (the PostgreSQL history reads no more).
   */
  products: ProductTotal[];
  /** Per currency, by code. */
  byCurrency: CurrencyStats[];
}

/** One currency's sums over some buckets: counts and totals by status, sold, and products' quantity and amount (millionths). */
export interface CurrencySums {
  counts: Map<string, number>;
  totals: Map<string, number>;
  sold: number;
  products: Map<string, { quantity: number; amount: number }>;
}

export const currencySums = (): CurrencySums => ({ counts: new Map(), totals: new Map(), sold: 0, products: new Map() });

/** The sums of `currency` in `map`, made when missing. */
export function sumsOf(map: Map<string, CurrencySums>, currency: string): CurrencySums {
  let sums = map.get(currency);
  if (!sums) map.set(currency, (sums = currencySums()));
  return sums;
}

/** Adds `from` into `into` (per-status, sold; products only when `withProducts`). */
export function addCurrencySums(into: Map<string, CurrencySums>, from: ReadonlyMap<string, CurrencySums>, withProducts: boolean): void {
  for (const [currency, sums] of from) {
    const target = sumsOf(into, currency);
    for (const [status, count] of sums.counts) target.counts.set(status, (target.counts.get(status) ?? 0) + count);
    for (const [status, total] of sums.totals) target.totals.set(status, (target.totals.get(status) ?? 0) + total);
    target.sold += sums.sold;
    if (!withProducts) continue;
    for (const [productId, p] of sums.products) {
      const product = target.products.get(productId) ?? { quantity: 0, amount: 0 };
      product.quantity += p.quantity;
      product.amount += p.amount;
      target.products.set(productId, product);
    }
  }
}

/** The currencies with a transaction or a sale, by code. */
export function currencyTotals(sums: ReadonlyMap<string, CurrencySums>): CurrencyTotal[] {
  const out: CurrencyTotal[] = [];
  for (const [currency, s] of [...sums.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const byStatus = byStatusOf(s.counts, s.totals);
    const count = byStatus.reduce((sum, entry) => sum + entry.count, 0);
    if (count === 0 && s.sold === 0) continue;
    out.push({ currency, count, totalSold: fromMicro(s.sold), byStatus });
  }
  return out;
}

/** The currencies of a range with their products, named as the range's products are (`names`: product id → name). */
export function currencyStats(sums: ReadonlyMap<string, CurrencySums>, names: ReadonlyMap<string, string | null>): CurrencyStats[] {
  return currencyTotals(sums).map((total) => {
    const products: ProductTotal[] = [];
    for (const [productId, p] of sums.get(total.currency)!.products) {
      if (p.quantity > 0 || p.amount > 0)
        products.push({
          productId,
          productName: names.get(productId) ?? null,
          quantity: fromMicro(p.quantity),
          amount: fromMicro(p.amount),
        });
    }
    return { ...total, products };
  });
}

/** Reads a per-currency field's name (`EUR:completed`) into its currency and the rest. */
function splitCurrency(name: string): [currency: string, rest: string] {
  const colon = name.indexOf(':');
  return [name.slice(0, colon), name.slice(colon + 1)];
}

/** Adds a per-currency bucket field (N, T, S, Q, A) to `into`; false for any other field. */
export function addCurrencyField(into: Map<string, CurrencySums>, kind: string, name: string, value: number): boolean {
  if (kind === 'S') {
    sumsOf(into, name).sold += value;
    return true;
  }
  if (kind !== 'N' && kind !== 'T' && kind !== 'Q' && kind !== 'A') return false;
  const [currency, rest] = splitCurrency(name);
  const sums = sumsOf(into, currency);
  if (kind === 'N') sums.counts.set(rest, (sums.counts.get(rest) ?? 0) + value);
  else if (kind === 'T') sums.totals.set(rest, (sums.totals.get(rest) ?? 0) + value);
  else {
    const product = sums.products.get(rest) ?? { quantity: 0, amount: 0 };
    if (kind === 'Q') product.quantity += value;
    else product.amount += value;
    sums.products.set(rest, product);
  }
  return true;
}

/** Product id → name, of a range's products. */
export const namesOf = (products: readonly ProductTotal[]): Map<string, string | null> =>
  new Map(products.map((p) => [p.productId, p.productName]));

const num = (value: string | number | undefined): number => (value === undefined ? 0 : Number(value));

export function byStatusOf(counts: Map<string, number>, totals: Map<string, number>): StatusTotal[] {
  return [...counts.entries()]
    .filter(([, count]) => count > 0)
    .map(([status, count]) => ({ status, count, total: fromMicro(totals.get(status) ?? 0) }))
    .sort((a, b) => b.count - a.count || (a.status < b.status ? -1 : 1));
}

/**
 * The statistics of `since`–`until` (aligned to the interval) from one bucket
 * map per interval, in order; a missing bucket is an empty one.
 */
export function summarize(
  since: number,
  until: number,
  interval: Interval,
  buckets: ReadonlyArray<BucketFields | undefined>,
): TransactionStats {
  const width = INTERVAL_MS[interval];
  const allCounts = new Map<string, number>();
  const allTotals = new Map<string, number>();
  const products = new Map<string, ProductSums>();
  const allCurrencies = new Map<string, CurrencySums>();
  let sold = 0;
  const out: StatsBucket[] = buckets.map((fields, index) => {
    const counts = new Map<string, number>();
    const totals = new Map<string, number>();
    const currencies = new Map<string, CurrencySums>();
    let bucketSold = 0;
    for (const [field, raw] of Object.entries(fields ?? {})) {
      const colon = field.indexOf(':');
      const kind = colon < 0 ? field : field.slice(0, colon);
      const name = field.slice(colon + 1);
      if (addCurrencyField(currencies, kind, name, num(raw))) continue;
      if (kind === 's') bucketSold += num(raw);
      else if (kind === 'n') counts.set(name, num(raw));
      else if (kind === 't') totals.set(name, num(raw));
      else if (kind === 'q' || kind === 'a' || kind === 'p') {
        const product = products.get(name) ?? { name: null, quantity: 0, amount: 0 };
        if (kind === 'q') product.quantity += num(raw);
        else if (kind === 'a') product.amount += num(raw);
        else product.name = String(raw);
        products.set(name, product);
      }
    }
    for (const [status, count] of counts) allCounts.set(status, (allCounts.get(status) ?? 0) + count);
    for (const [status, total] of totals) allTotals.set(status, (allTotals.get(status) ?? 0) + total);
    sold += bucketSold;
    addCurrencySums(allCurrencies, currencies, true);
    const byStatus = byStatusOf(counts, totals);
    const start = since + index * width;
    return {
      start,
      end: start + width,
      count: byStatus.reduce((sum, s) => sum + s.count, 0),
      totalSold: fromMicro(bucketSold),
      byStatus,
      byCurrency: currencyTotals(currencies),
    };
  });
  return rangeStats({
    since,
    until,
    interval,
    buckets: out,
    counts: allCounts,
    totals: allTotals,
    sold,
    products,
    currencies: allCurrencies,
  });
}

/** A range's statistics from its intervals and the range's sums (integer millionths), whichever store added them up. */
export function rangeStats(range: {
  since: number;
  until: number;
  interval: Interval;
  buckets: StatsBucket[];
  counts: Map<string, number>;
  totals: Map<string, number>;
  sold: number;
  products: ReadonlyMap<string, ProductSums>;
  currencies: ReadonlyMap<string, CurrencySums>;
}): TransactionStats {
  const byStatus = byStatusOf(range.counts, range.totals);
  const products = productTotals(range.products);
  return {
    since: range.since,
    until: range.until,
    interval: range.interval,
    buckets: range.buckets,
    count: byStatus.reduce((sum, s) => sum + s.count, 0),
    totalSold: fromMicro(range.sold),
    byStatus,
    products,
    byCurrency: currencyStats(range.currencies, namesOf(products)),
  };
}

/** A product's sums over a range: its name as the newest bucket naming it says, quantity and amount in millionths. */
export interface ProductSums {
  name: string | null;
  quantity: number;
  amount: number;
}

/** A product's name as shown: a line that named it with an empty text did not name it. */
export const shownName = (name: string | null): string | null => (name === '' ? null : name);

/** The products a range sold, from their sums (every store's statistics end here): what counts, how it is named, in units. */
export function productTotals(products: ReadonlyMap<string, ProductSums>): ProductTotal[] {
  const sales: ProductTotal[] = [];
  for (const [productId, p] of products) {
    if (p.quantity > 0 || p.amount > 0)
      sales.push({ productId, productName: shownName(p.name), quantity: fromMicro(p.quantity), amount: fromMicro(p.amount) });
  }
  return sales;
}

/**
 * The `count` products that sold most by `by`, then by the other figure, then by id. One pass keeping the best so far,
 * in order: a range sells thousands of products and an answer asks for a few, twice (a full sort cost more than the
 * rest of a week's answer).
 */
export function topProducts(products: readonly ProductTotal[], count: number, by: 'quantity' | 'amount'): ProductTotal[] {
  const other = by === 'quantity' ? 'amount' : 'quantity';
  const order = (a: ProductTotal, b: ProductTotal) =>
    b[by] - a[by] || b[other] - a[other] || (a.productId < b.productId ? -1 : a.productId > b.productId ? 1 : 0);
  const best: ProductTotal[] = [];
  if (count <= 0) return best;
  for (const product of products) {
    if (best.length === count && order(product, best[count - 1]!) >= 0) continue;
    let low = 0;
    let high = best.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (order(best[middle]!, product) <= 0) low = middle + 1;
      else high = middle;
    }
    best.splice(low, 0, product);
    if (best.length > count) best.pop();
  }
  return best;
}
