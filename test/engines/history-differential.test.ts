import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import type { HistoryRecord } from '../../src/history/history-record.js';
import { encodeRecentCursor, recentQuery, statsQuery } from '../../src/history/history-queries.js';
import type { Interval } from '../../src/history/history-stats.js';
import type { HistoryStore, RecentPage } from '../../src/history/history-store.js';
import { createMemoryHistory } from '../../src/history/memory-history.js';
import type pg from 'pg';
import { postgresHistoryDeployment, type PostgresHistoryDeployment } from '../helpers/postgres.js';
import { runs } from '../property/arbitraries.js';

/*
 * The PostgreSQL history against the in-process one (the reference): a random
 * series of webhooks over a few transactions, statuses and accounts (the same
 * transaction id in two accounts is two transactions) — redeliveries,
 * out-of-order and same-millisecond times, flip-flops, bursts applied by two
 * instances at once, batches applied in one database transaction (alone and
 * two at once), payment updates with and without a read-back — given to
 * both, with reads of pages by both instances between the changes (each
 * instance keeps the pages it read: a later read must show every change
 * since, by either instance). Then both must answer alike everything GraphQL
 * reads, account by account (one that sent nothing too): pages walked by
 * cursor under several filters, counted and not, statistics at every
 * interval, records. Seq
 * values are each store's own and are left out. One rulebook (the TypeScript
 * of src/history/) serves both; this is what shows the database around it
 * (indexes, collation, bucket rows, concurrency) keeps its answers.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const DAY = 86_400_000;
const WEEK = 7 * DAY;
// Code point order is not UTF-16 order for the last three ('\uE000' sorts before '😀' by code point).
const IDS = ['a', 'b', 'B', 'ab', 'é', '\uE000', '😀'];
const STATUSES = ['pending', 'completed', 'failed', 'paid'];
/** Absent: the default account, as `POST /webhooks` leaves it; '' names it as a store's caller does. */
const ACCOUNTS = [undefined, 'acme', 'zeta'] as const;
/** The accounts read: the default one, the two others, and one that never sent anything. */
const READ_ACCOUNTS = [DEFAULT_ACCOUNT, 'acme', 'zeta', 'never'];

type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

const offset = fc.oneof(
  fc.constantFrom(0, 1, 59_999, 60_000, 61_000, 3_599_999, 3_600_000, DAY - 1, DAY, -1, -DAY),
  fc.integer({ min: -2 * DAY, max: 2 * DAY }),
);
const line = fc.record({
  productId: fc.constantFrom('p1', 'p2', 'p3'),
  productName: fc.constantFrom('Water', 'Crisps', ''),
  productPrice: fc.constantFrom(0, 0.1, 1.1, 2.25, 1_999.99),
  quantity: fc.constantFrom(1, 2, 3),
});
const webhook = fc.record({
  account: fc.constantFrom(...ACCOUNTS),
  transactionId: fc.constantFrom(...IDS),
  status: fc.constantFrom(...STATUSES),
  at: offset,
  /** Without a timestamp, the event's time is when the gateway received it. */
  stamped: fc.boolean(),
  products: fc.array(line, { maxLength: 3 }),
  /** Whether the transaction carries its products as they were read (else with more fields). */
  sameProducts: fc.boolean(),
  /** The currency the gateway decided for the event (absent: none decided, as in a store fed directly). */
  currency: fc.constantFrom(undefined, 'EUR', 'SEK', 'USD'),
  /** A currency the transaction's own fields name (read when the event has none decided). */
  currencyCode: fc.constantFrom(undefined, 'GBP', 'sek'),
});
type Webhook = ValueOf<typeof webhook>;

/** Indexes into the webhooks: one again is a redelivery; `elsewhere` goes through a second log, past its dedupe. */
const step = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('publish' as const), webhook: fc.nat(), elsewhere: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('burst' as const),
      webhooks: fc.array(fc.nat(), { minLength: 2, maxLength: 5 }),
      batched: fc.boolean(),
    }),
  },
  /** Events a feed applies in one database transaction (the same transaction several times, a redelivery among them). */
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('batch' as const),
      webhooks: fc.array(fc.nat(), { minLength: 2, maxLength: 8 }),
      elsewhere: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('payment' as const),
      account: fc.constantFrom(...ACCOUNTS),
      transactionId: fc.constantFrom(...IDS),
      at: offset,
      fields: fc.subarray(['amount', 'paymentMethod', 'status']),
      readBack: fc.option(
        fc.record({
          status: fc.constantFrom(...STATUSES),
          products: fc.array(line, { maxLength: 2 }),
          currencyCode: fc.constantFrom(undefined, 'USD'),
        }),
        { nil: undefined },
      ),
    }),
  },
);
/**
 * A read between changes, by both instances, as GraphQL asks with and without `totalCount`: each instance keeps the
 * pages it read, and a later read must show every change made since, by either instance.
 */
const read = fc.record({
  kind: fc.constant('read' as const),
  account: fc.constantFrom(...READ_ACCOUNTS),
  first: fc.constantFrom(1, 2, 100),
  status: fc.constantFrom([], ['pending'], ['completed', 'failed']),
  withTotal: fc.boolean(),
});
const series = fc.record({
  webhooks: fc.array(webhook, { minLength: 1, maxLength: 12 }),
  steps: fc.array(fc.oneof({ weight: 4, arbitrary: step }, { weight: 1, arbitrary: read }), { minLength: 1, maxLength: 40 }),
  soldStatuses: fc.subarray(STATUSES, { maxLength: 2 }),
});

function toEvent(w: Webhook, eventId: string): TransactionUpdateEvent {
  const carried = w.sameProducts ? w.products : w.products.map((p) => ({ ...p, productSku: `sku-${p.productId}` }));
  const transaction = {
    transactionId: w.transactionId,
    status: w.status,
    products: carried,
    note: `sent at ${w.at}`,
    ...(w.currencyCode ? { currencyCode: w.currencyCode } : {}),
  };
  return {
    ...(w.account === undefined ? {} : { account: w.account }),
    ...(w.currency === undefined ? {} : { currency: w.currency }),
    eventId,
    type: 'transaction.update',
    format: 'ENVELOPED',
    receivedAt: new Date(T0 + w.at + 500).toISOString(),
    occurredAt: w.stamped ? new Date(T0 + w.at).toISOString() : undefined,
    transactionId: w.transactionId,
    status: w.status,
    products: w.products,
    transaction,
    raw: {},
  };
}

/** What GraphQL shows of a record: everything but the stores' own seq values. */
const shown = (record: HistoryRecord | undefined) =>
  record && { ...record, latest: record.latest[0], entries: record.entries.map(([time, , status, eventId]) => [time, status, eventId]) };
const shownPage = (page: RecentPage) => ({ ...page, records: page.records.map(shown) });

/**
 * Every page of a query of the account's history, walked by cursor; without `withTotal`, as GraphQL reads when `totalCount` is not
 * selected.
 */
async function walk(store: HistoryStore, account: string, args: Parameters<typeof recentQuery>[1], withTotal = true) {
  const pages = [];
  let after: string | undefined;
  for (let n = 0; n < 20; n += 1) {
    const page = await store.recent(recentQuery(account, { ...args, after }, withTotal));
    // A store may count anyway (in process it does): only what was asked for is compared.
    pages.push(shownPage(withTotal ? page : { records: page.records, hasNextPage: page.hasNextPage }));
    if (!page.hasNextPage || page.records.length === 0) break;
    after = encodeRecentCursor(page.records.at(-1)!);
  }
  return pages;
}

/** Everything GraphQL reads of each account, from `store` and from the in-process reference, must be alike. */
async function compareAll(store: HistoryStore, memory: HistoryStore, now: number): Promise<void> {
  // At once: the reads are round trips, the database idle between them.
  await Promise.all(READ_ACCOUNTS.map((account) => compareAccount(store, memory, account, now)));
}

async function compareAccount(store: HistoryStore, memory: HistoryStore, account: string, now: number): Promise<void> {
  const ids = [...IDS, 'never'];
  expect((await store.records(account, ids)).map(shown), account).toEqual((await memory.records(account, ids)).map(shown));
  const filters = [[], ['pending'], ['completed', 'failed'], STATUSES, ['unknown']];
  // Whole minutes and partial ones (the shared store counts whole minutes from its sums, the ends row by row).
  const windows = [
    {},
    { since: new Date(T0 - 60_000), until: new Date(T0 + 3_600_000) },
    { until: new Date(T0) },
    { since: new Date(T0 - DAY - 30_500), until: new Date(T0 + 61_000) },
  ];
  const walks = filters.flatMap((status) => [1, 2, 3, 100].flatMap((first) => windows.map((window) => ({ first, status, ...window }))));
  await Promise.all(
    walks.map(async (args) =>
      expect(await walk(store, account, args), JSON.stringify({ account, ...args })).toEqual(await walk(memory, account, args)),
    ),
  );
  // Again without counting: the pages read above are kept, and handed out again only as they stand.
  for (const args of walks)
    expect(await walk(store, account, args, false), JSON.stringify({ account, ...args, withTotal: false })).toEqual(
      await walk(memory, account, args, false),
    );
  // Wide ranges, and ranges that end just past the events (their newest buckets hold products: names are found there).
  const ranges: Array<[Interval, number, number]> = [
    ['MINUTE', T0 - DAY / 2, T0 + DAY / 2],
    ['HOUR', T0 - 2 * DAY, T0 + 3 * DAY],
    ['DAY', T0 - 10 * DAY, T0 + 10 * DAY],
    ['MINUTE', T0 - 7_200_000, T0 + 120_000],
    ['HOUR', T0 - DAY, T0 + 2 * 3_600_000],
    ['DAY', T0 - 5 * DAY, T0 + DAY],
  ];
  for (const [interval, since, until] of ranges) {
    const query = statsQuery(account, { since: new Date(since), until: new Date(until), interval }, now);
    const [fromStore, fromMemory] = [await store.stats(query), await memory.stats(query)];
    // The products' order is the caller's to make (by quantity, amount, id).
    for (const stats of [fromStore, fromMemory]) {
      stats.products.sort((a, b) => (a.productId < b.productId ? -1 : 1));
      for (const currency of stats.byCurrency) currency.products.sort((a, b) => (a.productId < b.productId ? -1 : 1));
    }
    expect(fromStore, `${account} ${interval}`).toEqual(fromMemory);
  }
}

/**
 * The same series through PostgreSQL, applied as instances apply what their
 * logs admitted: a redelivery reaches the store (its rule ignores an event id it
 * holds), a burst is applied at once by two instances, and the in-process store
 * takes the burst in the order PostgreSQL applied it (the seq it gave each
 * event). No count bound: the database keeps everything within retention.
 */
async function checkPostgres(
  deployment: PostgresHistoryDeployment,
  pools: [pg.Pool, pg.Pool],
  input: ValueOf<typeof series>,
): Promise<void> {
  let now = T0 + 3 * DAY;
  await deployment.admin.query(
    'TRUNCATE history_transactions, history_bucket_totals, history_bucket_products, history_bucket_currency_products, history_meta',
  );
  const options = { retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: input.soldStatuses, now: () => now };
  const memory = createMemoryHistory({ ...options, maxTransactions: 1_000 });
  const here = await deployment.instance(options, pools[0]);
  const elsewhere = await deployment.instance(options, pools[1]);
  const events = input.webhooks.map((w, i) => toEvent(w, `e${i}`));
  const eventAt = (index: number) => events[index % events.length]!;
  for (const s of input.steps) {
    now += 1_000;
    if (s.kind === 'read') {
      const args = { first: s.first, status: s.status };
      const expected = await walk(memory, s.account, args, s.withTotal);
      for (const store of [here, elsewhere]) expect(await walk(store, s.account, args, s.withTotal), JSON.stringify(s)).toEqual(expected);
    } else if (s.kind === 'publish') {
      const event = eventAt(s.webhook);
      await (s.elsewhere ? elsewhere : here).apply(event);
      memory.apply(event);
    } else if (s.kind === 'batch') {
      const batch = s.webhooks.map(eventAt);
      await (s.elsewhere ? elsewhere : here).applyAll(batch);
      for (const event of batch) memory.apply(event);
    } else if (s.kind === 'burst') {
      const burst = s.webhooks.map(eventAt);
      // Each event by one instance or the other at once, or each instance a batch of every other event at once.
      if (s.batched)
        await Promise.all([here.applyAll(burst.filter((_, i) => i % 2 === 0)), elsewhere.applyAll(burst.filter((_, i) => i % 2 === 1))]);
      else await Promise.all(burst.map((event, i) => (i % 2 ? elsewhere : here).apply(event)));
      // The seq PostgreSQL gave each event, read from the records of the accounts the burst went to (event ids are the series' own).
      const seqOf = new Map<string, number>();
      for (const account of new Set(burst.map((event) => event.account ?? DEFAULT_ACCOUNT))) {
        const records = await here.records(account, [
          ...new Set(burst.filter((event) => (event.account ?? DEFAULT_ACCOUNT) === account).map((event) => event.transactionId)),
        ]);
        for (const record of records) for (const entry of record?.entries ?? []) seqOf.set(entry[3], entry[1]);
      }
      for (const event of [...burst].sort((a, b) => (seqOf.get(a.eventId) ?? 0) - (seqOf.get(b.eventId) ?? 0))) memory.apply(event);
    } else {
      const note = { account: s.account ?? DEFAULT_ACCOUNT, transactionId: s.transactionId, fields: s.fields, at: T0 + s.at };
      const readBack = s.readBack && { transactionId: s.transactionId, ...s.readBack };
      const recorded = await here.notePayment(note);
      expect(recorded).toBe(await memory.notePayment(note));
      if (!recorded && readBack) expect(await elsewhere.notePayment(note, readBack)).toBe(await memory.notePayment(note, readBack));
    }
  }
  await compareAll(here, memory, now);
}

describe('the PostgreSQL history against the in-process one', () => {
  it('answers every page, statistic and record alike after the same random series', async () => {
    const deployment = await postgresHistoryDeployment();
    try {
      const pools: [pg.Pool, pg.Pool] = [deployment.pool(), deployment.pool()];
      await fc.assert(
        fc.asyncProperty(series, (input) => checkPostgres(deployment, pools, input)),
        runs(100),
      );
    } finally {
      await deployment.close();
    }
    // A hundred series, each a bounded amount of work: the bound catches a hang, not a busy machine (the suite runs
    // four files at once on two cores, and a clean-clone run took 75 s to past 180 s for the same work).
  }, 600_000);
});
