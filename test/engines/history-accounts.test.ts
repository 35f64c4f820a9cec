import { describe, expect, it, vi, type TestContext } from 'vitest';
import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { encodeRecentCursor, recentQuery, statsQuery } from '../../src/history/history-queries.js';
import type { HistoryStore } from '../../src/history/history-store.js';
import { createMemoryHistory } from '../../src/history/memory-history.js';
import { historyEvent as event } from '../helpers/history-events.js';
import { postgresHistoryDeployment } from '../helpers/postgres.js';

/*
 * Each account's history apart, in both stores: an event goes to its
 * account's history only, one transaction id in two accounts is two records,
 * every read is one account's (a cursor made in one account's list positions
 * a page of the reader's own), a payment is noted in the account named. Then
 * what is each store's own: in process, a bound and a coverage per account
 * and histories made and let go as accounts come and go; in PostgreSQL,
 * batches over several accounts and retention across them.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const WEEK = 7 * 86_400_000;
const ACME = 'acme';

const of = (account: string, e: TransactionUpdateEvent): TransactionUpdateEvent => ({ ...e, account });
const ids = async (store: HistoryStore, account: string, args = {}) =>
  (await store.recent(recentQuery(account, { first: 100, ...args }))).records.map((r) => r.transactionId);

type Make = (ctx: TestContext, now: () => number) => Promise<HistoryStore & { apply(event: TransactionUpdateEvent): void | Promise<void> }>;
const stores: Array<[string, Make]> = [
  [
    'in process',
    async (_ctx, now) => createMemoryHistory({ maxTransactions: 100, retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now }),
  ],
  [
    'PostgreSQL',
    async (ctx, now) => {
      const deployment = await postgresHistoryDeployment();
      ctx.onTestFinished(() => deployment.close());
      return deployment.instance({ retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now });
    },
  ],
];

describe.each(stores)('%s history, per account', (_name, make) => {
  it('keeps one transaction id of two accounts as two records, each read in its own account only', async (ctx) => {
    const h = await make(ctx, () => T0 + 60_000);
    await h.apply(event('t1', 'pending', T0, 'e1'));
    // The same event id too: dedupe is the event log's, per account; the history's rule looks in the account's record.
    await h.apply(of(ACME, event('t1', 'completed', T0 + 1_000, 'e1')));
    await h.apply(of(ACME, event('t2', 'failed', T0 + 2_000, 'e2', 5)));
    // The default account named as '' is the one of an event that names none.
    await h.apply(of(DEFAULT_ACCOUNT, event('t3', 'paid', T0 + 3_000, 'e3')));
    const [own, theirs] = [(await h.records(DEFAULT_ACCOUNT, ['t1']))[0], (await h.records(ACME, ['t1']))[0]];
    expect([own?.status, own?.entries.length]).toEqual(['pending', 1]);
    expect([theirs?.status, theirs?.entries.length]).toEqual(['completed', 1]);
    expect(await h.records(ACME, ['t3'])).toEqual([undefined]);
    expect(await h.records('zeta', ['t1', 't2'])).toEqual([undefined, undefined]);
    expect(await ids(h, DEFAULT_ACCOUNT)).toEqual(['t3', 't1']);
    expect(await ids(h, ACME)).toEqual(['t2', 't1']);
    expect(await ids(h, ACME, { status: ['pending'] })).toEqual([]);
    expect(await ids(h, 'zeta')).toEqual([]);
    expect((await h.recent(recentQuery(ACME, { first: 1 }))).totalCount).toBe(2);
    expect((await h.recent(recentQuery('zeta', { first: 1 }))).totalCount).toBe(0);
    const stats = async (account: string) => h.stats(statsQuery(account, { since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect((await stats(DEFAULT_ACCOUNT)).byStatus).toEqual([
      { status: 'paid', count: 1, total: 2 },
      { status: 'pending', count: 1, total: 2 },
    ]);
    expect((await stats(ACME)).byStatus).toEqual([
      { status: 'completed', count: 1, total: 2 },
      { status: 'failed', count: 1, total: 5 },
    ]);
    expect([(await stats(ACME)).totalSold, (await stats('zeta')).count, (await stats('zeta')).products]).toEqual([7, 0, []]);
  });

  it("pages with a cursor made in another account as a position in the reader's own list", async (ctx) => {
    const h = await make(ctx, () => T0 + 60_000);
    for (let i = 0; i < 5; i += 1) {
      await h.apply(event(`a${i}`, 'completed', T0 + i * 1_000, `a${i}`));
      await h.apply(of(ACME, event(`b${i}`, 'completed', T0 + i * 1_000 + 500, `b${i}`)));
    }
    const first = await h.recent(recentQuery(DEFAULT_ACCOUNT, { first: 2 }));
    expect(first.records.map((r) => r.transactionId)).toEqual(['a4', 'a3']);
    const after = encodeRecentCursor(first.records.at(-1)!);
    expect(await ids(h, DEFAULT_ACCOUNT, { after })).toEqual(['a2', 'a1', 'a0']);
    expect(await ids(h, ACME, { after })).toEqual(['b2', 'b1', 'b0']);
  });

  it('notes a payment in the account named, and starts no record in another', async (ctx) => {
    const h = await make(ctx, () => T0 + 60_000);
    await h.apply(event('t1', 'pending', T0, 'e1'));
    const note = { account: ACME, transactionId: 't1', fields: ['status'], at: T0 + 5_000 };
    expect(await h.notePayment(note)).toBe(false);
    expect(await h.notePayment(note, { transactionId: 't1', status: 'paid', products: [] })).toBe(true);
    expect((await h.records(ACME, ['t1']))[0]?.status).toBe('paid');
    const [own] = await h.records(DEFAULT_ACCOUNT, ['t1']);
    expect([own?.status, own?.payments]).toEqual(['pending', []]);
    expect(await h.notePayment({ ...note, account: DEFAULT_ACCOUNT })).toBe(true);
  });

  it('covers an account that sent nothing yet from when the store started', async (ctx) => {
    let now = T0;
    const h = await make(ctx, () => now);
    now += 60_000;
    await h.apply(of(ACME, event('t1', 'pending', now, 'e1')));
    expect(await h.coveredSince(ACME)).toBe(T0);
    expect(await h.coveredSince('zeta')).toBe(T0);
    expect(await h.coveredSince(DEFAULT_ACCOUNT)).toBe(T0);
  });
});

describe('in-process history, per account', () => {
  it('bounds each account by HISTORY_MAX_TRANSACTIONS on its own, with its own coverage', async () => {
    const h = createMemoryHistory({ maxTransactions: 2, retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => T0 });
    for (let i = 0; i < 3; i += 1) h.apply(of(ACME, event(`t${i}`, 'completed', T0 + 1_000 + i * 1_000, `e${i}`)));
    for (let i = 0; i < 2; i += 1) h.apply(event(`t${i}`, 'completed', T0 + i * 1_000, `d${i}`));
    expect([h.size(ACME), h.size(DEFAULT_ACCOUNT), h.accountCount()]).toEqual([2, 2, 2]);
    expect((await h.records(ACME, ['t0', 't1', 't2'])).map((r) => r?.transactionId)).toEqual([undefined, 't1', 't2']);
    expect((await h.records(DEFAULT_ACCOUNT, ['t0', 't1'])).map((r) => r?.transactionId)).toEqual(['t0', 't1']);
    expect(await h.coveredSince(ACME)).toBe(T0 + 1_001);
    expect(await h.coveredSince(DEFAULT_ACCOUNT)).toBe(T0);
    h.close();
  });

  it("makes an account's history at its first event, not at a read, and lets it go once retention emptied it", async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let now = T0;
      const h = createMemoryHistory({ maxTransactions: 100, retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => now });
      await h.recent(recentQuery(ACME, {}));
      await h.stats(statsQuery(ACME, {}, now));
      await h.records(ACME, ['t1']);
      expect(await h.notePayment({ account: ACME, transactionId: 't1', fields: ['status'], at: now })).toBe(false);
      expect(h.accountCount()).toBe(1);
      h.apply(of(ACME, event('t1', 'completed', now, 'e1')));
      expect([h.accountCount(), h.bucketCount(ACME), h.bucketCount(DEFAULT_ACCOUNT)]).toEqual([2, 3, 0]);
      // A retention later its record goes, taking its sums back (which touches its buckets: they go a retention after that).
      now += WEEK + 1;
      vi.advanceTimersByTime(60_000);
      expect([h.size(ACME), h.bucketCount(ACME), h.accountCount()]).toEqual([0, 3, 2]);
      now += WEEK + 1;
      vi.advanceTimersByTime(60_000);
      expect(h.accountCount()).toBe(1);
      // Made again by its next event.
      h.apply(of(ACME, event('t2', 'completed', now, 'e2')));
      expect(await ids(h, ACME)).toEqual(['t2']);
      h.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('PostgreSQL history, per account', () => {
  it('applies a batch over several accounts, one id in each, to a record per account', async (ctx) => {
    const deployment = await postgresHistoryDeployment();
    ctx.onTestFinished(() => deployment.close());
    const options = { retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => T0 + 60_000 };
    const [one, two] = [await deployment.instance(options), await deployment.instance(options)];
    await one.applyAll([
      event('t1', 'pending', T0, 'e1'),
      of(ACME, event('t1', 'failed', T0 + 1, 'e2')),
      event('t1', 'completed', T0 + 2, 'e3'),
      of(ACME, event('t1', 'failed', T0 + 1, 'e2')),
    ]);
    expect((await one.records(DEFAULT_ACCOUNT, ['t1']))[0]?.entries.map((entry) => entry[3])).toEqual(['e1', 'e3']);
    expect((await one.records(ACME, ['t1']))[0]?.entries.map((entry) => entry[3])).toEqual(['e2']);
    // Two instances making the same id's record in two accounts at once: neither is in the other's way.
    await Promise.all([one.apply(event('n1', 'a', T0, 'n-1')), two.apply(of(ACME, event('n1', 'b', T0, 'n-2')))]);
    expect([(await one.records(DEFAULT_ACCOUNT, ['n1']))[0]?.status, (await one.records(ACME, ['n1']))[0]?.status]).toEqual(['a', 'b']);
  });

  it('sweeps what is past retention in every account, leaving no negative sums', async (ctx) => {
    let now = T0;
    const deployment = await postgresHistoryDeployment();
    ctx.onTestFinished(() => deployment.close());
    const h = await deployment.instance({ retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => now });
    await h.apply(event('old', 'completed', T0, 'o1'));
    await h.apply(of(ACME, event('old', 'completed', T0, 'o2')));
    now += WEEK - 1_000;
    await h.apply(of(ACME, event('new', 'completed', now, 'n1')));
    now += 2 * 60_000;
    expect(await h.sweep()).toBe(2);
    expect(await ids(h, DEFAULT_ACCOUNT)).toEqual([]);
    expect(await ids(h, ACME)).toEqual(['new']);
    const { rows } = await deployment.admin.query<{ account: string; n: string }>(
      "SELECT account, count(*) AS n FROM history_bucket_totals WHERE field = 'n:completed' AND value <> 0 GROUP BY account",
    );
    expect(rows).toEqual([{ account: ACME, n: '3' }]);
    const negative = await deployment.admin.query<{ n: string }>(
      'SELECT (SELECT count(*) FROM history_bucket_totals WHERE value < 0) + ' +
        '(SELECT count(*) FROM history_bucket_products WHERE quantity < 0 OR amount < 0) AS n',
    );
    expect(negative.rows[0]!.n).toBe('0');
  });
});
