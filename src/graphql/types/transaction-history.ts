import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { Transaction } from '../../contract/index.js';
import type { GatewayContext } from '../context.js';
import { badUserInput } from '../../errors.js';
import { statusChanges, type HistoryRecord, type StatusChange } from '../../history/history-record.js';
import {
  encodeRecentCursor,
  MAX_RECENT_PAGE,
  MAX_TOP_PRODUCTS,
  recentQuery,
  statsQuery,
  MAX_INTERVALS,
  MAX_STATUS_FILTER,
} from '../../history/history-queries.js';
import { historyUnavailable, type HistoryReader } from '../../history/history-reader.js';
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
import { TransactionRef } from '../refs.js';
import { PageInfoRef, type PageInfo } from './vending-connection.js';

/*
 * The transaction history: GraphQL only, since the REST contract
 * has no list of transactions to pass through. Read from the history store,
 * never from the upstream.
 */

/** Fields whose answers change with every event: the response cache never keeps an operation that selects one. */
export const HISTORY_FIELDS = [
  'Query.recentTransactions',
  'Query.transactionStats',
  'Transaction.history',
  'Transaction.firstSeen',
  'Transaction.lastUpdated',
  'Transaction.paymentUpdates',
];

/** A transaction read from the history carries its record, so its history fields need no second read. */
const RECORD = Symbol('history record');

/** A node made of a record read afresh (from a database): nothing derived from it is worth remembering. */
const READ_ONCE = Symbol('read once');
type FromHistory = Transaction & { [RECORD]?: HistoryRecord; [READ_ONCE]?: true };

/** The currency the history decided for the transaction's latest event, when it was read from the history. */
export const decidedCurrency = (tx: Transaction): string | undefined => (tx as FromHistory)[RECORD]?.currency;

/** Whether the transaction's lists are read once only, so that a total is computed rather than remembered. */
export const readOnce = (tx: Transaction): boolean => (tx as FromHistory)[READ_ONCE] === true;

/** Records the store keeps do not change (a change makes a new one): each is made a node once, however many pages show it. */
const nodes = new WeakMap<HistoryRecord, FromHistory>();

function nodeOf(record: HistoryRecord, ctx: GatewayContext): FromHistory {
  if (!ctx.history?.store.keepsRecords) {
    return {
      ...record.transaction,
      transactionId: record.transactionId,
      status: record.status,
      products: record.products,
      [RECORD]: record,
      [READ_ONCE]: true,
    };
  }
  let node = nodes.get(record);
  if (!node) {
    node = {
      ...record.transaction,
      transactionId: record.transactionId,
      status: record.status,
      products: record.products,
      [RECORD]: record,
    };
    nodes.set(record, node);
  }
  return node;
}

function historyOf(ctx: GatewayContext): HistoryReader {
  if (!ctx.history) throw badUserInput('The transaction history is off on this gateway (HISTORY=off)');
  return ctx.history;
}

/**
 * `read` of the record of any Transaction, however it was read (undefined when
 * the history never saw it, or is off): at once for one read from the history,
 * else through the operation's batched history reader.
 */
function fromRecord<T>(tx: FromHistory, ctx: GatewayContext, read: (record: HistoryRecord | undefined) => T): T | Promise<T> {
  const held = tx[RECORD];
  if (held || !ctx.history) return read(held);
  return ctx.history.record(tx.transactionId).then(read);
}

const StatusChangeRef = builder.objectRef<StatusChange>('TransactionStatusChange').implement({
  description: 'A status a transaction took, and when.',
  fields: (t) =>
    fieldsOf<Sdl.TransactionStatusChange>()({
      status: t.exposeString('status', { description: 'The status from then on.' }),
      at: t.field({
        type: 'DateTime',
        description: "When: the event's own timestamp when its envelope had one, else when the gateway received it.",
        resolve: (c) => new Date(c.at),
      }),
      eventId: t.exposeID('eventId', {
        nullable: true,
        description: 'The event that brought it; null for a status read back after a payment update.',
      }),
    }),
});

const PaymentUpdateRef = builder.objectRef<[number, string[]]>('PaymentUpdate').implement({
  description:
    'A payment update made through this gateway (GraphQL or REST). Only the names of the fields it set are kept; their values stay ' +
    'with the service.',
  fields: (t) =>
    fieldsOf<Sdl.PaymentUpdate>()({
      at: t.field({ type: 'DateTime', description: 'When the service accepted it.', resolve: ([at]) => new Date(at) }),
      fields: t.stringList({ description: 'Names of the top-level fields of the payment body.', resolve: ([, fields]) => fields }),
    }),
});

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** The history's fields of `Transaction`, spread into its definition (transaction.ts). */
export function historyFieldsOfTransaction(t: PothosSchemaTypes.ObjectFieldBuilder<Types, FromHistory>) {
  return {
    history: t.field({
      type: [StatusChangeRef],
      nullable: { list: true, items: false },
      description:
        'The status changes of this transaction seen by the gateway, oldest first (events of one status in a row are one change; an ' +
        'event that arrived late is in its place by time). Empty when the gateway saw none; null (with an UPSTREAM_UNAVAILABLE ' +
        'error) when the history cannot be read right now, the rest of the transaction still served.',
      resolve: (tx, _args, ctx) => fromRecord(tx, ctx, (record) => (record ? statusChanges(record.entries) : [])),
    }),
    firstSeen: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'Time of the earliest event of this transaction the gateway saw; null when none.',
      resolve: (tx, _args, ctx) => fromRecord(tx, ctx, (record) => (record ? new Date(record.firstSeen) : null)),
    }),
    lastUpdated: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        'Time of the latest event or payment update of this transaction the gateway saw; null when none. `recentTransactions` is ' +
        'ordered by it.',
      resolve: (tx, _args, ctx) => fromRecord(tx, ctx, (record) => (record ? new Date(record.lastUpdated) : null)),
    }),
    paymentUpdates: t.field({
      type: [PaymentUpdateRef],
      nullable: { list: true, items: false },
      description:
        'Payment updates made through the gateway, oldest first (at most 20); null (with an UPSTREAM_UNAVAILABLE error) when the ' +
        'history cannot be read right now.',
      resolve: (tx, _args, ctx) => fromRecord(tx, ctx, (record) => record?.payments ?? []),
    }),
  };
}

/** `coveredSince` of either answer: read only when asked for, from the same store. */
const coveredSinceField = {
  type: 'DateTime' as const,
  description:
    'From when the history holds every transaction updated since: the latest of when its store started holding events, now − ' +
    'HISTORY_RETENTION, and just after the last update of any transaction dropped to stay within HISTORY_MAX_TRANSACTIONS. A range ' +
    'starting earlier is answered from this part of it only.',
  resolve: async (_parent: unknown, _args: unknown, ctx: GatewayContext) => {
    const history = historyOf(ctx);
    return new Date(await history.store.coveredSince(await history.account()).catch(historyUnavailable));
  },
};

interface Connection {
  /** Cursors are made only for a page whose edges are asked for. */
  records: HistoryRecord[];
  pageInfo: PageInfo;
  /** Counted only when the operation selects it (selectsField). */
  totalCount: number | undefined;
}

/**
 * Whether the field being resolved selects `name` directly, through fragments too, whatever their type
 * condition or directives say: a yes where the answer will not show it costs a count, a no would lose one.
 */
function selectsField(info: GraphQLResolveInfo, name: string): boolean {
  const seen = new Set<string>();
  const within = (set: SelectionSetNode | undefined): boolean =>
    set !== undefined &&
    set.selections.some((selection) => {
      if (selection.kind === Kind.FIELD) return selection.name.value === name;
      if (selection.kind === Kind.INLINE_FRAGMENT) return within(selection.selectionSet);
      if (seen.has(selection.name.value)) return false;
      seen.add(selection.name.value);
      return within(info.fragments[selection.name.value]?.selectionSet);
    });
  return info.fieldNodes.some((node) => within(node.selectionSet));
}

const TransactionEdgeRef = builder.objectRef<HistoryRecord>('TransactionEdge').implement({
  description: 'A transaction of the history and its cursor.',
  fields: (t) =>
    fieldsOf<Sdl.TransactionEdge>()({
      cursor: t.string({
        description: 'Opaque position of this transaction (its last update and id): pages after it stay right while new events arrive.',
        resolve: encodeRecentCursor,
      }),
      node: t.field({
        type: TransactionRef,
        description: 'The transaction as its latest event carried it.',
        resolve: (record, _args, ctx) => nodeOf(record, ctx),
      }),
    }),
});

const TransactionConnectionRef = builder.objectRef<Connection>('TransactionConnection').implement({
  description: 'A page of the transaction history, most recently updated first.',
  fields: (t) =>
    fieldsOf<Sdl.TransactionConnection>()({
      edges: t.field({
        type: [TransactionEdgeRef],
        description: 'The transactions of this page with their cursors.',
        resolve: (c) => c.records,
      }),
      nodes: t.field({
        type: [TransactionRef],
        description: 'The transactions of this page.',
        resolve: (c, _args, ctx) => c.records.map((record) => nodeOf(record, ctx)),
      }),
      pageInfo: t.field({ type: PageInfoRef, description: 'Where this page stands.', resolve: (c) => c.pageInfo }),
      totalCount: t.int({
        description: 'How many transactions match the statuses and time range, over all pages.',
        resolve: (c) => {
          // The resolver of the connection counted because this field is selected: never reached without a count.
          if (c.totalCount === undefined) throw new Error('recentTransactions was read without its count');
          return c.totalCount;
        },
      }),
      coveredSince: t.field(coveredSinceField),
    }),
});

const StatsIntervalRef = builder.enumType('StatsInterval', {
  description: 'The width of the intervals of `transactionStats`, aligned to UTC.',
  values: exactly<Sdl.StatsInterval>()({
    MINUTE: { value: 'MINUTE', description: 'One minute.' },
    HOUR: { value: 'HOUR', description: 'One hour.' },
    DAY: { value: 'DAY', description: 'One UTC day.' },
  } as const),
});

/** Why the figures that add amounts of different currencies together are kept, and what to read instead. */
const ACROSS_CURRENCIES = 'Adds amounts of different currencies together; read the same figure per currency under `byCurrency`.';

const StatusTotalRef = builder.objectRef<StatusTotal>('StatusTotal').implement({
  description: 'Transactions of one status.',
  fields: (t) =>
    fieldsOf<Sdl.StatusTotal>()({
      status: t.exposeString('status', { description: 'Their status now.' }),
      count: t.exposeInt('count', { description: 'How many.' }),
      total: t.exposeFloat('total', {
        description: 'The sum of their totals, added across currencies.',
        deprecationReason: ACROSS_CURRENCIES,
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

const ProductSalesRef = builder.objectRef<ProductTotal>('ProductSales').implement({
  description: 'What one product sold in the range.',
  fields: (t) =>
    fieldsOf<Sdl.ProductSales>()({
      productId: t.exposeID('productId', { description: 'The product.' }),
      productName: t.exposeString('productName', { nullable: true, description: 'Its name as last seen.' }),
      quantity: t.exposeFloat('quantity', { description: 'Units sold (a line without a quantity counts one).' }),
      amount: t.exposeFloat('amount', {
        description: 'productPrice × quantity, summed across currencies.',
        deprecationReason: ACROSS_CURRENCIES,
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
  description:
    'The sum of the totals of the transactions that count as sold (HISTORY_SOLD_STATUSES; by default all), added across currencies.',
  deprecationReason: ACROSS_CURRENCIES,
};
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
      totalSold: t.exposeFloat('totalSold', totalSoldField),
      byStatus: t.field({ type: [StatusTotalRef], ...byStatusField, resolve: (b) => b.byStatus }),
      byCurrency: t.field({ type: [CurrencyTotalRef], description: byCurrencyDescription, resolve: (b) => b.byCurrency }),
    }),
});

const topArgs = (t: { arg: { int: (options: object) => unknown } }) => ({
  first: t.arg.int({ defaultValue: 10, description: `How many, at most ${MAX_TOP_PRODUCTS}.` }),
});

function top(stats: Pick<TransactionStats, 'products'>, first: number | null | undefined, by: 'quantity' | 'amount'): ProductTotal[] {
  const count = first ?? 10;
  if (count < 0 || count > MAX_TOP_PRODUCTS) throw badUserInput(`first must be from 0 to ${MAX_TOP_PRODUCTS}, got ${count}`);
  return topProducts(stats.products, count, by);
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
      totalSold: t.exposeFloat('totalSold', totalSoldField),
      byStatus: t.field({ type: [StatusTotalRef], ...byStatusField, resolve: (s) => s.byStatus }),
      byCurrency: t.field({
        type: [CurrencyStatsRef],
        description: `${byCurrencyDescription} Each currency has its own top products.`,
        resolve: (s) => s.byCurrency,
      }),
      topProductsByQuantity: t.field({
        type: [ProductSalesRef],
        description:
          'The products sold most, by units (sold transactions of the range); a product sold in several currencies has its amounts ' +
          'added across them: `byCurrency` keeps them apart.',
        args: topArgs(t) as never,
        resolve: (s, args: { first?: number | null }) => top(s, args.first, 'quantity'),
      }),
      topProductsByAmount: t.field({
        type: [ProductSalesRef],
        description:
          'The products sold most, by amount added across currencies (sold transactions of the range): `byCurrency` ranks them in ' +
          'each currency.',
        args: topArgs(t) as never,
        resolve: (s, args: { first?: number | null }) => top(s, args.first, 'amount'),
      }),
    }),
});

builder.queryFields((t) =>
  rootFieldsOf<Sdl.Query>()({
    recentTransactions: t.field({
      type: TransactionConnectionRef,
      description:
        `Transactions the gateway saw in webhooks and payment updates, most recently updated first (GraphQL only: the REST service ` +
        `cannot list transactions). Kept for HISTORY_RETENTION, at most HISTORY_MAX_TRANSACTIONS.`,
      args: {
        first: t.arg.int({ description: `Page size, 0 to ${MAX_RECENT_PAGE}; default 20.` }),
        after: t.arg.string({ description: 'The `endCursor` of the previous page.' }),
        status: t.arg.stringList({ description: `Only transactions whose status now is one of these (at most ${MAX_STATUS_FILTER}).` }),
        since: t.arg({ type: 'DateTime', description: 'Only transactions last updated at or after this time.' }),
        until: t.arg({ type: 'DateTime', description: 'Only transactions last updated before this time.' }),
      },
      resolve: async (_root, args, ctx, info) => {
        const history = historyOf(ctx);
        const query = recentQuery(await history.listedAccount(), args, selectsField(info, 'totalCount'));
        const page = await history.store.recent(query).catch(historyUnavailable);
        const [first, last] = [page.records[0], page.records.at(-1)];
        return {
          records: page.records,
          totalCount: page.totalCount,
          pageInfo: {
            hasNextPage: page.hasNextPage,
            hasPreviousPage: query.after !== undefined,
            startCursor: first ? encodeRecentCursor(first) : null,
            endCursor: last ? encodeRecentCursor(last) : null,
          },
        };
      },
    }),
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
