import { refuse } from '../../refusals/refusals.js';
import { MAX_INTERVALS, MAX_TOP_PRODUCTS, statsQuery } from '../../history/history-queries.js';
import { historyUnavailable } from '../../history/history-reader.js';
import {
  topProducts,
  type CurrencyStats,
  type CurrencyTotal,
  type ProductTotal,
  type StatusTotal,
  type StatsBucket,
  type TransactionStats,
} from '../../history/history-stats.js';
import { builder } from '../builder.js';
import { exactly, fieldsOf, rootFieldsOf, type Sdl } from '../field-check.js';
import { coveredSinceField, historyOf } from './transaction-history.js';

/*
 * `transactionStats`: counts and sums of the transaction history over a
 * range, per interval and per currency. Read from the history store, never
 * from the upstream.
 */

const StatsIntervalRef = builder.enumType('StatsInterval', {
  description: 'The width of the intervals of `transactionStats`, aligned to UTC.',
  values: exactly<Sdl.StatsInterval>()({
    MINUTE: { value: 'MINUTE', description: 'One minute.' },
    HOUR: { value: 'HOUR', description: 'One hour.' },
    DAY: { value: 'DAY', description: 'One UTC day.' },
  } as const),
});

/** Why the figures that add amounts of different currencies together are kept, and what to read instead. */
const ACROSS_CURRENCIES =
  'Adds amounts of different currencies together; answers only while its amounts are of one currency. Read the same figure ' +
  'per currency under `byCurrency`.';

/** A figure that adds amounts together, with the currencies whose amounts are in it (those that add a non-zero amount). */
type Across<T> = T & { currencies: readonly string[] };

/** The currencies of `byCurrency` whose part of a figure (`amountIn`) is not zero. */
const currenciesIn = <C extends { currency: string }>(byCurrency: readonly C[], amountIn: (entry: C) => number | undefined) =>
  byCurrency.filter((entry) => (amountIn(entry) ?? 0) !== 0).map((entry) => entry.currency);

/**
 * A deprecated figure's value while its amounts are of one currency; otherwise that field alone is refused
 * (10 EUR + 1000 SEK is no amount), naming where the figure is kept per currency.
 */
function oneCurrency(field: string, value: number, currencies: readonly string[]): number {
  if (currencies.length <= 1) return value;
  throw refuse.mixedCurrencies(field, currencies);
}

/** The statuses of a range or an interval, each with the currencies of its total. */
const statusesAcross = (byStatus: readonly StatusTotal[], byCurrency: readonly CurrencyTotal[]): Array<Across<StatusTotal>> =>
  byStatus.map((status) => ({
    ...status,
    currencies: currenciesIn(byCurrency, (entry) => entry.byStatus.find((each) => each.status === status.status)?.total),
  }));

const StatusTotalRef = builder.objectRef<Across<StatusTotal>>('StatusTotal').implement({
  description: 'Transactions of one status.',
  fields: (t) =>
    fieldsOf<Sdl.StatusTotal>()({
      status: t.exposeString('status', { description: 'Their status now.' }),
      count: t.exposeInt('count', { description: 'How many.' }),
      total: t.float({
        nullable: true,
        description: 'The sum of their totals, while they are of one currency.',
        deprecationReason: ACROSS_CURRENCIES,
        resolve: (status) => oneCurrency('total', status.total, status.currencies),
      }),
    }),
});

/*
 * The figures of one currency have types of their own, so that the figures
 * that add currencies together (above) can be deprecated without deprecating
 * the same figure within one currency.
 */
const CurrencyStatusTotalRef = builder.objectRef<StatusTotal>('CurrencyStatusTotal').implement({
  description: 'Transactions of one status, in one currency.',
  fields: (t) =>
    fieldsOf<Sdl.CurrencyStatusTotal>()({
      status: t.exposeString('status', { description: 'Their status now.' }),
      count: t.exposeInt('count', { description: 'How many.' }),
      total: t.exposeFloat('total', { description: 'The sum of their totals, in this currency.' }),
    }),
});

const ProductSalesRef = builder.objectRef<Across<ProductTotal>>('ProductSales').implement({
  description: 'What one product sold in the range.',
  fields: (t) =>
    fieldsOf<Sdl.ProductSales>()({
      productId: t.exposeID('productId', { description: 'The product.' }),
      productName: t.exposeString('productName', { nullable: true, description: 'Its name as last seen.' }),
      quantity: t.exposeFloat('quantity', { description: 'Units sold (a line without a quantity counts one).' }),
      amount: t.float({
        nullable: true,
        description: 'productPrice × quantity, summed, while its sales are of one currency.',
        deprecationReason: ACROSS_CURRENCIES,
        resolve: (product) => oneCurrency('amount', product.amount, product.currencies),
      }),
    }),
});

const CurrencyProductSalesRef = builder.objectRef<ProductTotal>('CurrencyProductSales').implement({
  description: 'What one product sold in the range, in one currency.',
  fields: (t) =>
    fieldsOf<Sdl.CurrencyProductSales>()({
      productId: t.exposeID('productId', { description: 'The product.' }),
      productName: t.exposeString('productName', { nullable: true, description: 'Its name as last seen.' }),
      quantity: t.exposeFloat('quantity', { description: 'Units sold in this currency (a line without a quantity counts one).' }),
      amount: t.exposeFloat('amount', { description: 'productPrice × quantity, summed, in this currency.' }),
    }),
});

const byStatusField = { description: 'Transactions by their status now, most first.' };
const totalSoldField = {
  nullable: true,
  description:
    'The sum of the totals of the transactions that count as sold (HISTORY_SOLD_STATUSES; by default all), while they are of ' +
    'one currency.',
  deprecationReason: ACROSS_CURRENCIES,
  resolve: (figures: { totalSold: number; byCurrency: readonly CurrencyTotal[] }) =>
    oneCurrency(
      'totalSold',
      figures.totalSold,
      currenciesIn(figures.byCurrency, (entry) => entry.totalSold),
    ),
} as const;
const byCurrencyDescription =
  'The same figures per currency (ISO 4217 code, in code order): amounts of different currencies are never added.';

const CurrencyTotalRef = builder.objectRef<CurrencyTotal>('CurrencyTotal').implement({
  description: 'The transactions of one currency in an interval.',
  fields: (t) =>
    fieldsOf<Sdl.CurrencyTotal>()({
      currency: t.exposeString('currency', {
        description: "ISO 4217 code: the transaction's own, else its vending's `currencyCode`, else DEFAULT_CURRENCY.",
      }),
      count: t.exposeInt('count', { description: 'How many transactions.' }),
      totalSold: t.exposeFloat('totalSold', { description: 'The sum of the totals of those that count as sold, in this currency.' }),
      byStatus: t.field({
        type: [CurrencyStatusTotalRef],
        description: 'By their status now, most first; totals in this currency.',
        resolve: (c) => c.byStatus,
      }),
    }),
});

const StatsIntervalRowRef = builder.objectRef<StatsBucket>('TransactionStatsInterval').implement({
  description: 'The transactions whose last update falls in one interval.',
  fields: (t) =>
    fieldsOf<Sdl.TransactionStatsInterval>()({
      start: t.field({ type: 'DateTime', description: 'Start of the interval (included).', resolve: (b) => new Date(b.start) }),
      end: t.field({ type: 'DateTime', description: 'End of the interval (excluded).', resolve: (b) => new Date(b.end) }),
      count: t.exposeInt('count', { description: 'How many transactions.' }),
      totalSold: t.float(totalSoldField),
      byStatus: t.field({ type: [StatusTotalRef], ...byStatusField, resolve: (b) => statusesAcross(b.byStatus, b.byCurrency) }),
      byCurrency: t.field({ type: [CurrencyTotalRef], description: byCurrencyDescription, resolve: (b) => b.byCurrency }),
    }),
});

const topArgs = (t: { arg: { int: (options: object) => unknown } }) => ({
  first: t.arg.int({ defaultValue: 10, description: `How many, at most ${MAX_TOP_PRODUCTS}.` }),
});

function top(stats: Pick<TransactionStats, 'products'>, first: number | null | undefined, by: 'quantity' | 'amount'): ProductTotal[] {
  const count = first ?? 10;
  if (count < 0 || count > MAX_TOP_PRODUCTS) throw refuse.firstOutOfRange(MAX_TOP_PRODUCTS, count);
  return topProducts(stats.products, count, by);
}

/** Top products of the whole range, each with the currencies of its amount. */
function productsAcross(stats: TransactionStats, products: readonly ProductTotal[]): Array<Across<ProductTotal>> {
  const amounts = stats.byCurrency.map(
    (entry) => [entry.currency, new Map(entry.products.map((product) => [product.productId, product.amount]))] as const,
  );
  return products.map((product) => ({
    ...product,
    currencies: amounts.filter(([, byProduct]) => (byProduct.get(product.productId) ?? 0) !== 0).map(([currency]) => currency),
  }));
}

const CurrencyStatsRef = builder.objectRef<CurrencyStats>('CurrencyStats').implement({
  description: 'The transactions of one currency over the range, with the products sold in it.',
  fields: (t) =>
    fieldsOf<Sdl.CurrencyStats>()({
      currency: t.exposeString('currency', {
        description: "ISO 4217 code: the transaction's own, else its vending's `currencyCode`, else DEFAULT_CURRENCY.",
      }),
      count: t.exposeInt('count', { description: 'How many transactions in the whole range.' }),
      totalSold: t.exposeFloat('totalSold', { description: 'The sum of the totals of those that count as sold, in this currency.' }),
      byStatus: t.field({
        type: [CurrencyStatusTotalRef],
        description: 'By their status now, most first; totals in this currency.',
        resolve: (c) => c.byStatus,
      }),
      topProductsByQuantity: t.field({
        type: [CurrencyProductSalesRef],
        description: 'The products sold most in this currency, by units; amounts in this currency.',
        args: topArgs(t) as never,
        resolve: (c, args: { first?: number | null }) => top(c, args.first, 'quantity'),
      }),
      topProductsByAmount: t.field({
        type: [CurrencyProductSalesRef],
        description: 'The products sold most in this currency, by amount.',
        args: topArgs(t) as never,
        resolve: (c, args: { first?: number | null }) => top(c, args.first, 'amount'),
      }),
    }),
});

const TransactionStatsRef = builder.objectRef<TransactionStats>('TransactionStats').implement({
  description:
    'Counts and sums of the transaction history over a time range. A transaction counts once, in the interval of its last update, ' +
    'with its status now.',
  fields: (t) =>
    fieldsOf<Sdl.TransactionStats>()({
      since: t.field({
        type: 'DateTime',
        description: 'Start of the range, aligned down to the interval.',
        resolve: (s) => new Date(s.since),
      }),
      until: t.field({
        type: 'DateTime',
        description: 'End of the range (excluded), aligned up to the interval.',
        resolve: (s) => new Date(s.until),
      }),
      interval: t.field({ type: StatsIntervalRef, description: 'The width of each interval.', resolve: (s) => s.interval }),
      coveredSince: t.field(coveredSinceField),
      intervals: t.field({
        type: [StatsIntervalRowRef],
        description: 'Every interval of the range, oldest first, empty ones included.',
        resolve: (s) => s.buckets,
      }),
      count: t.exposeInt('count', { description: 'How many transactions in the whole range.' }),
      totalSold: t.float(totalSoldField),
      byStatus: t.field({ type: [StatusTotalRef], ...byStatusField, resolve: (s) => statusesAcross(s.byStatus, s.byCurrency) }),
      byCurrency: t.field({
        type: [CurrencyStatsRef],
        description: `${byCurrencyDescription} Each currency has its own top products.`,
        resolve: (s) => s.byCurrency,
      }),
      topProductsByQuantity: t.field({
        type: [ProductSalesRef],
        description:
          'The products sold most, by units (sold transactions of the range); the `amount` of a product sold in several currencies ' +
          'is refused: `byCurrency` keeps them apart.',
        args: topArgs(t) as never,
        resolve: (s, args: { first?: number | null }) => productsAcross(s, top(s, args.first, 'quantity')),
      }),
      topProductsByAmount: t.field({
        type: [ProductSalesRef],
        description:
          'The products sold most, by amount added across currencies (sold transactions of the range): `byCurrency` ranks them in ' +
          'each currency.',
        args: topArgs(t) as never,
        resolve: (s, args: { first?: number | null }) => productsAcross(s, top(s, args.first, 'amount')),
      }),
    }),
});

builder.queryFields((t) =>
  rootFieldsOf<Sdl.Query>()({
    transactionStats: t.field({
      type: TransactionStatsRef,
      description:
        `Transactions by status, total sold and top products per interval (at most ${MAX_INTERVALS} intervals), from the history ` +
        `(GraphQL only). Default: the last hour by minute, the last day by hour, the last week by day.`,
      args: {
        since: t.arg({ type: 'DateTime', description: 'Start of the range (aligned down to the interval).' }),
        until: t.arg({ type: 'DateTime', description: 'End of the range (aligned up to the interval); default now.' }),
        interval: t.arg({ type: StatsIntervalRef, defaultValue: 'MINUTE', description: 'Width of each interval.' }),
      },
      resolve: async (_root, args, ctx) => {
        const history = historyOf(ctx);
        return history.store.stats(statsQuery(await history.listedAccount(), args, Date.now())).catch(historyUnavailable);
      },
    }),
  }),
);
