import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import { describe, expect, it, type TestContext } from 'vitest';
import { statusChanges, type HistoryRecord } from '../../src/history/history-record.js';
import { encodeRecentCursor, recentQuery, statsQuery } from '../../src/history/history-queries.js';
import { createMemoryHistory } from '../../src/history/memory-history.js';
import { createLogger } from '../../src/logging/logger.js';
import { coveringBuckets } from '../../src/postgres/postgres-buckets.js';
import { isTransientPostgresError, migrate } from '../../src/postgres/postgres-database.js';
import { historyEvent as event } from '../helpers/history-events.js';
import { postgresHistoryDeployment, testDatabase } from '../helpers/postgres.js';

/*
 * The PostgreSQL history: the cases of the other stores' tests (same rules,
 * same answers), then what only a database has: migrations on an empty
 * database, instances applying events of one transaction at once, retention
 * by a sweep, coverage, and a restart.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const WEEK = 7 * 86_400_000;
const all = (args = {}) => recentQuery(DEFAULT_ACCOUNT, { first: 100, ...args });

async function start(ctx: TestContext, now = () => T0 + 60_000) {
  const deployment = await postgresHistoryDeployment();
  ctx.onTestFinished(() => deployment.close());
  const options = { retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now };
  const history = await deployment.instance(options);
  return { history, deployment, options };
}

const withoutSeq = (r: HistoryRecord | undefined) =>
  r && { ...r, latest: r.latest[0], entries: r.entries.map(([time, , status, id]) => [time, status, id]) };

describe.concurrent('PostgreSQL history', () => {
  it('migrates an empty database, and finds nothing to do the second time', async (ctx) => {
    const database = await testDatabase();
    ctx.onTestFinished(() => database.drop());
    const logger = createLogger('silent');
    expect(await migrate(database.url, logger)).toEqual([
      '1764000000000_history',
      '1795723200000_history-accounts',
      '1795900000000_history-sums-in-keys',
      '1796000000000_history-currencies',
      '1796100000000_history-change-markers',
      '1796200000000_event-log',
    ]);
    expect(await migrate(database.url, logger)).toEqual([]);
  });

  it('applies each distinct event once and never moves back to an older state', async (ctx) => {
    const { history } = await start(ctx);
    await history.apply(event('t1', 'pending', T0, 'e1'));
    await history.apply(event('t1', 'completed', T0 + 2_000, 'e3'));
    await history.apply(event('t1', 'pending', T0, 'e1')); // redelivered
    await history.apply(event('t1', 'active', T0 + 1_000, 'e2')); // late
    const [record] = await history.records(DEFAULT_ACCOUNT, ['t1']);
    expect(record?.status).toBe('completed');
    expect(statusChanges(record!.entries).map((c) => c.status)).toEqual(['pending', 'active', 'completed']);
    expect([record?.firstSeen, record?.lastUpdated]).toEqual([T0, T0 + 2_000]);
    const stats = await history.stats(statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect(stats.byStatus).toEqual([{ status: 'completed', count: 1, total: 2 }]);
    expect(stats.totalSold).toBe(2);
  });

  it('pages newest-updated first, by id within a millisecond, with cursors that survive updates', async (ctx) => {
    const { history } = await start(ctx);
    for (let i = 0; i < 10; i += 1) await history.apply(event(`t${i}`, i % 2 ? 'pending' : 'completed', T0 + i * 1_000, `e${i}`));
    const first = await history.recent(all({ first: 4 }));
    expect(first.records.map((r) => r.transactionId)).toEqual(['t9', 't8', 't7', 't6']);
    expect([first.hasNextPage, first.totalCount]).toEqual([true, 10]);
    await history.apply(event('t2', 'completed', T0 + 20_000, 'late'));
    const second = await history.recent(all({ first: 10, after: encodeRecentCursor(first.records.at(-1)!) }));
    expect(second.records.map((r) => r.transactionId)).toEqual(['t5', 't4', 't3', 't1', 't0']);
    expect((await history.recent(all({ status: ['pending'] }))).records.map((r) => r.transactionId)).toEqual([
      't9',
      't7',
      't5',
      't3',
      't1',
    ]);
    expect((await history.recent(all({ status: ['pending', 'completed'], first: 3 }))).records.map((r) => r.transactionId)).toEqual([
      't2',
      't9',
      't8',
    ]);
    const window = await history.recent(all({ since: new Date(T0 + 3_000), until: new Date(T0 + 6_000) }));
    expect(window.records.map((r) => r.transactionId)).toEqual(['t5', 't4', 't3']);
    expect(window.totalCount).toBe(3);
    // Code point order, as in process: U+E000 sorts before an astral character.
    for (const id of ['\uE000', '😀', 'é']) await history.apply(event(id, 'completed', T0 + 30_000, `tie-${id}`));
    expect((await history.recent(all({ first: 3 }))).records.map((r) => r.transactionId)).toEqual(['😀', '\uE000', 'é']);
  });

  it('records payment updates, and starts a record from a read-back transaction', async (ctx) => {
    const { history } = await start(ctx);
    await history.apply(event('t1', 'pending', T0, 'e1'));
    expect(await history.notePayment({ account: DEFAULT_ACCOUNT, transactionId: 't1', fields: ['status'], at: T0 + 5_000 })).toBe(true);
    expect(await history.notePayment({ account: DEFAULT_ACCOUNT, transactionId: 't2', fields: ['status'], at: T0 + 5_000 })).toBe(false);
    const products = [{ productId: 'p1', productPrice: 1, quantity: 2 }];
    expect(
      await history.notePayment(
        { account: DEFAULT_ACCOUNT, transactionId: 't2', fields: ['status'], at: T0 + 6_000 },
        { transactionId: 't2', status: 'paid', products },
      ),
    ).toBe(true);
    const [t1, t2] = await history.records(DEFAULT_ACCOUNT, ['t1', 't2']);
    expect(t1?.payments).toEqual([[T0 + 5_000, ['status']]]);
    expect(statusChanges(t2!.entries)).toEqual([{ status: 'paid', at: T0 + 6_000, eventId: null }]);
  });

  it('covers a range with few buckets: whole days, a partial day as its hours or as the day less the others, minutes at its ends', () => {
    const H = 3_600_000;
    const D = 24 * H;
    // 19 hours of the first day: the day less its 5 first hours; 2 hours of the last: those hours.
    expect(coveringBuckets(D + 5 * H, 4 * D + 2 * H)).toEqual([
      ['d', 2 * D, 4 * D, 1],
      ['d', D, 2 * D, 1],
      ['h', D, D + 5 * H, -1],
      ['h', 4 * D, 4 * D + 2 * H, 1],
    ]);
    // Unless the hours past the range are later than now: nothing is there yet.
    expect(coveringBuckets(D + 5 * H, 4 * D + 2 * H, 4 * D + 2 * H)).toEqual([
      ['d', 2 * D, 4 * D, 1],
      ['d', D, 2 * D, 1],
      ['h', D, D + 5 * H, -1],
      ['d', 4 * D, 5 * D, 1],
      ['h', 4 * D + 2 * H, 5 * D, -1],
    ]);
    expect(coveringBuckets(H + 60_000, 2 * H)).toEqual([
      ['h', H, 2 * H, 1],
      ['m', H, H + 60_000, -1],
    ]);
    expect(coveringBuckets(H + 120_000, H + 180_000)).toEqual([['m', H + 120_000, H + 180_000, 1]]);
    expect(coveringBuckets(0, D)).toEqual([['d', 0, D, 1]]);
  });

  it('sums statistics by interval and products by quantity and amount', async (ctx) => {
    const { history } = await start(ctx, () => T0 + 3 * 60_000);
    await history.apply(event('a', 'completed', T0 + 10_000, 'a1', 1.1, 3));
    await history.apply(event('b', 'completed', T0 + 70_000, 'b1', 2.2, 1));
    await history.apply(event('c', 'failed', T0 + 75_000, 'c1', 5, 1));
    const stats = await history.stats(
      statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 120_000), interval: 'MINUTE' }, T0),
    );
    expect(stats.buckets.map((b) => [b.count, b.totalSold])).toEqual([
      [1, 3.3],
      [2, 7.2],
    ]);
    expect(stats.totalSold).toBe(10.5);
    expect(stats.products).toEqual([{ productId: 'p1', productName: 'Water', quantity: 5, amount: 10.5 }]);
  });

  it('keeps a record as the in-process store does, MAX_ENTRIES and MAX_PAYMENTS included (seq aside)', async (ctx) => {
    const { history, options } = await start(ctx);
    const memory = createMemoryHistory({ ...options, maxTransactions: 100 });
    for (let i = 0; i < 105; i += 1) {
      const e = event('t1', i % 3 ? 'pending' : 'completed', T0 + ((i * 7) % 50) * 1_000, `e${i}`, 1.25, 3);
      await history.apply(e);
      memory.apply(e);
    }
    for (let i = 0; i < 25; i += 1) {
      const note = { account: DEFAULT_ACCOUNT, transactionId: 't1', fields: [`f${i}`], at: T0 + ((i * 11) % 30) * 1_000 };
      expect(await history.notePayment(note)).toBe(await memory.notePayment(note));
    }
    const [stored] = await history.records(DEFAULT_ACCOUNT, ['t1']);
    expect(stored!.entries).toHaveLength(100);
    expect(withoutSeq(stored)).toEqual(withoutSeq((await memory.records(DEFAULT_ACCOUNT, ['t1']))[0]));
  });

  it('serializes instances applying events of one transaction at once: every event counted once', async (ctx) => {
    const { history, deployment, options } = await start(ctx);
    const other = await deployment.instance(options);
    const events = Array.from({ length: 30 }, (_, i) => event('t1', `s${i % 4}`, T0 + i * 10, `e${i}`));
    // As the gateway's feeds do, an apply PostgreSQL cancelled (its statement timeout, spent waiting for the row's lock
    // on a busy machine) is tried again: applying an event twice changes nothing.
    const apply = async (store: typeof history, e: (typeof events)[number]): Promise<void> => {
      for (;;) {
        try {
          return await store.apply(e);
        } catch (error) {
          if (!isTransientPostgresError(error)) throw error;
        }
      }
    };
    // Each event twice, once by each instance, all at the same moment.
    await Promise.all(events.flatMap((e, i) => (i % 2 ? [apply(history, e), apply(other, e)] : [apply(other, e), apply(history, e)])));
    const [record] = await history.records(DEFAULT_ACCOUNT, ['t1']);
    expect(record!.entries.map((entry) => entry[3])).toEqual(events.map((e) => e.eventId));
    expect(record!.status).toBe('s1');
    const stats = await other.stats(statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect(stats.byStatus).toEqual([{ status: 's1', count: 1, total: 2 }]);
    // New transactions raced too: the row one instance inserts, the other waits for.
    await Promise.all(
      ['n1', 'n2', 'n3'].flatMap((id) => [apply(history, event(id, 'a', T0, `${id}-1`)), apply(other, event(id, 'b', T0 + 1, `${id}-2`))]),
    );
    expect((await history.records(DEFAULT_ACCOUNT, ['n1', 'n2', 'n3'])).map((r) => r?.entries.length)).toEqual([2, 2, 2]);
  });

  it('forgets a record HISTORY_RETENTION after the gateway last changed it, in a sweep off the event path', async (ctx) => {
    let now = T0;
    const { history, deployment } = await start(ctx, () => now);
    await history.apply(event('old', 'completed', T0 - 365 * 86_400_000, 'o1'));
    now += WEEK - 1_000;
    await history.apply(event('new', 'completed', now, 'n1'));
    now += 2 * 60_000;
    // Past retention but not swept yet: reads skip it already.
    const page = await history.recent(all());
    expect(page.records.map((r) => r.transactionId)).toEqual(['new']);
    expect(page.totalCount).toBe(1);
    expect(await history.sweep()).toBe(1);
    expect((await history.records(DEFAULT_ACCOUNT, ['old', 'new'])).map((r) => r?.transactionId)).toEqual([undefined, 'new']);
    const stats = await history.stats(
      statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0 - 366 * 86_400_000), until: new Date(now), interval: 'DAY' }, now),
    );
    expect(stats.count).toBe(1);
    const { rows } = await deployment.admin.query<{ n: string }>(
      'SELECT (SELECT count(*) FROM history_bucket_totals WHERE value < 0) + ' +
        '(SELECT count(*) FROM history_bucket_products WHERE quantity < 0 OR amount < 0) AS n',
    );
    expect(rows[0]!.n).toBe('0');
  });

  it('says from when it covers: when it started holding events, at most HISTORY_RETENTION ago', async (ctx) => {
    let now = T0;
    const { history } = await start(ctx, () => now);
    expect(await history.coveredSince(DEFAULT_ACCOUNT)).toBe(T0);
    now += 2 * WEEK;
    expect(await history.coveredSince(DEFAULT_ACCOUNT)).toBe(now - WEEK);
  });

  it('reads after a restart what the instance before it wrote', async (ctx) => {
    const { history, deployment, options } = await start(ctx);
    await history.apply(event('t1', 'completed', T0, 'e1'));
    await history.notePayment({ account: DEFAULT_ACCOUNT, transactionId: 't1', fields: ['status'], at: T0 + 1_000 });
    const [before] = await history.records(DEFAULT_ACCOUNT, ['t1']);
    const restarted = await deployment.instance({ ...options, now: () => T0 + 120_000 });
    expect(await restarted.records(DEFAULT_ACCOUNT, ['t1'])).toEqual([before]);
    expect((await restarted.recent(all())).records).toEqual([before]);
    expect((await restarted.stats(statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 60_000) }, T0))).count).toBe(1);
    expect(await restarted.coveredSince(DEFAULT_ACCOUNT)).toBe(T0 + 60_000);
  });
});
