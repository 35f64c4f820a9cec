import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { Transaction } from '../../contract/contract.js';
import type { GatewayContext } from '../context.js';
import { refuse } from '../../refusals/refusals.js';
import { statusChanges, type HistoryRecord, type StatusChange } from '../../history/history-record.js';
import { encodeRecentCursor, MAX_RECENT_PAGE, recentQuery, MAX_STATUS_FILTER } from '../../history/history-queries.js';
import { historyUnavailable, type HistoryReader } from '../../history/history-reader.js';
import { builder } from '../builder.js';
import { fieldsOf, rootFieldsOf, type Sdl } from '../field-check.js';
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

export function historyOf(ctx: GatewayContext): HistoryReader {
  if (!ctx.history) throw refuse.historyOff();
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

/** `coveredSince` of either answer (the page's and the statistics'): read only when asked for, from the same store. */
export const coveredSinceField = {
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
  }),
);
