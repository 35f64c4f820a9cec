import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import { describe, expect, it, vi } from 'vitest';
import { statusChanges } from '../../src/history/history-record.js';
import { encodeRecentCursor, recentQuery, statsQuery } from '../../src/history/history-queries.js';
import { createMemoryHistory } from '../../src/history/memory-history.js';
import { historyEvent } from '../helpers/history-events.js';

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const WEEK = 7 * 86_400_000;

const event = historyEvent;

const history = (now = T0 + 60_000, maxTransactions = 100_000) =>
  createMemoryHistory({ maxTransactions, retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => now });
const all = (args = {}) => recentQuery(DEFAULT_ACCOUNT, { first: 100, ...args });

describe('memory history', () => {
  it('applies each distinct event once and never moves back to an older state', async () => {
    const h = history();
    h.apply(event('t1', 'pending', T0, 'e1'));
    h.apply(event('t1', 'completed', T0 + 2_000, 'e3'));
    h.apply(event('t1', 'pending', T0, 'e1')); // redelivered
    h.apply(event('t1', 'active', T0 + 1_000, 'e2')); // late
    const [record] = await h.records(DEFAULT_ACCOUNT, ['t1']);
    expect(record?.status).toBe('completed');
    expect(statusChanges(record!.entries).map((c) => c.status)).toEqual(['pending', 'active', 'completed']);
    expect(record?.firstSeen).toBe(T0);
    expect(record?.lastUpdated).toBe(T0 + 2_000);
    const stats = await h.stats(statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect(stats.count).toBe(1);
    expect(stats.byStatus).toEqual([{ status: 'completed', count: 1, total: 2 }]);
    expect(stats.totalSold).toBe(2);
  });

  it('keeps a status that comes back (flip-flop) and collapses repeats of one status', async () => {
    const h = history();
    for (const [i, status] of ['pending', 'pending', 'completed', 'pending'].entries())
      h.apply(event('t1', status, T0 + i * 1_000, `e${i}`));
    const [record] = await h.records(DEFAULT_ACCOUNT, ['t1']);
    expect(record?.status).toBe('pending');
    expect(statusChanges(record!.entries).map((c) => [c.status, c.eventId])).toEqual([
      ['pending', 'e0'],
      ['completed', 'e2'],
      ['pending', 'e3'],
    ]);
  });

  it('pages newest-updated first with cursors that survive updates between pages', async () => {
    const h = history();
    for (let i = 0; i < 10; i += 1) h.apply(event(`t${i}`, i % 2 ? 'pending' : 'completed', T0 + i * 1_000, `e${i}`));
    const first = await h.recent(all({ first: 4 }));
    expect(first.records.map((r) => r.transactionId)).toEqual(['t9', 't8', 't7', 't6']);
    expect(first.hasNextPage).toBe(true);
    expect(first.totalCount).toBe(10);
    // t2 moves to the top between pages: the next page goes on below t6 and does not repeat t9…t6.
    h.apply(event('t2', 'completed', T0 + 20_000, 'late'));
    const last = first.records.at(-1)!;
    const second = await h.recent(all({ first: 10, after: encodeRecentCursor(last) }));
    expect(second.records.map((r) => r.transactionId)).toEqual(['t5', 't4', 't3', 't1', 't0']);
    expect(second.hasNextPage).toBe(false);
    const pending = await h.recent(all({ status: ['pending'] }));
    expect(pending.records.map((r) => r.transactionId)).toEqual(['t9', 't7', 't5', 't3', 't1']);
    const merged = await h.recent(all({ status: ['pending', 'completed'], first: 3 }));
    expect(merged.records.map((r) => r.transactionId)).toEqual(['t2', 't9', 't8']);
    const window = await h.recent(all({ since: new Date(T0 + 3_000), until: new Date(T0 + 6_000) }));
    expect(window.records.map((r) => r.transactionId)).toEqual(['t5', 't4', 't3']);
    expect(window.totalCount).toBe(3);
  });

  it('drops the least recently updated past HISTORY_MAX_TRANSACTIONS, taking their sums back', async () => {
    const h = history(T0 + 60_000, 3);
    for (let i = 0; i < 5; i += 1) h.apply(event(`t${i}`, 'completed', T0 + i * 1_000, `e${i}`));
    expect(h.size()).toBe(3);
    expect((await h.records(DEFAULT_ACCOUNT, ['t0', 't1', 't2'])).map((r) => r?.transactionId)).toEqual([undefined, undefined, 't2']);
    const stats = await h.stats(statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect(stats.count).toBe(3);
  });

  it('says from when it covers: its start, then after the last update dropped for the count, then now − HISTORY_RETENTION', async () => {
    let now = T0;
    const h = createMemoryHistory({ maxTransactions: 2, retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => now });
    expect(await h.coveredSince(DEFAULT_ACCOUNT)).toBe(T0);
    // Times before the start: dropping them for the count says nothing the start did not.
    for (let i = 0; i < 3; i += 1) h.apply(event(`old${i}`, 'completed', T0 - 10_000 + i * 1_000, `o${i}`));
    expect(await h.coveredSince(DEFAULT_ACCOUNT)).toBe(T0);
    for (let i = 0; i < 3; i += 1) h.apply(event(`t${i}`, 'completed', T0 + 1_000 + i * 1_000, `e${i}`));
    // t0 went for the count: whatever was updated up to its last update may be missing.
    expect((await h.records(DEFAULT_ACCOUNT, ['t0']))[0]).toBeUndefined();
    expect(await h.coveredSince(DEFAULT_ACCOUNT)).toBe(T0 + 1_001);
    now = T0 + WEEK + 5_000;
    expect(await h.coveredSince(DEFAULT_ACCOUNT)).toBe(T0 + 5_000);
  });

  it('keeps events with old timestamps, and forgets a record HISTORY_RETENTION after the gateway last changed it', async () => {
    let now = T0;
    const h = createMemoryHistory({ maxTransactions: 100, retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => now });
    h.apply(event('old', 'completed', T0 - 365 * 86_400_000, 'o1'));
    expect((await h.recent(all())).records.map((r) => r.transactionId)).toEqual(['old']);
    now += WEEK - 1_000;
    h.apply(event('new', 'completed', now, 'n1'));
    now += 2_000;
    const page = await h.recent(all());
    expect(page.records.map((r) => r.transactionId)).toEqual(['new']);
    expect(page.totalCount).toBe(1);
    const stats = await h.stats(
      statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0 - 366 * 86_400_000), until: new Date(now), interval: 'DAY' }, now),
    );
    expect(stats.count).toBe(1);
  });

  it('sweeps buckets past HISTORY_RETENTION on a timer, not on the event path, and stops it when closed', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let now = T0;
      const h = createMemoryHistory({ maxTransactions: 100, retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => now });
      h.apply(event('old', 'completed', T0, 'o1'));
      expect(h.bucketCount()).toBe(3); // its minute, hour and day
      now += WEEK + 1_000;
      h.apply(event('new', 'completed', now, 'n1'));
      // The event dropped the old record (and took its sums back) but swept no bucket.
      expect((await h.records(DEFAULT_ACCOUNT, ['old']))[0]).toBeUndefined();
      expect(h.bucketCount()).toBe(6);
      // Taking its sums back changed its buckets: they go a retention later, with the timer's next run.
      now += WEEK + 1;
      expect(h.bucketCount()).toBe(6);
      vi.advanceTimersByTime(60_000);
      // The old record's buckets are gone; the new one's, just taken back by the sweep's own trim, stay.
      expect(h.bucketCount()).toBe(3);
      expect((await h.records(DEFAULT_ACCOUNT, ['new']))[0]).toBeUndefined();
      h.close();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('records payment updates, and starts a record from a read-back transaction', async () => {
    const h = history();
    h.apply(event('t1', 'pending', T0, 'e1'));
    expect(await h.notePayment({ account: DEFAULT_ACCOUNT, transactionId: 't1', fields: ['status'], at: T0 + 5_000 })).toBe(true);
    expect(await h.notePayment({ account: DEFAULT_ACCOUNT, transactionId: 't2', fields: ['status'], at: T0 + 5_000 })).toBe(false);
    const products = [{ productId: 'p1', productPrice: 1, quantity: 2 }];
    expect(
      await h.notePayment(
        { account: DEFAULT_ACCOUNT, transactionId: 't2', fields: ['status'], at: T0 + 6_000 },
        { transactionId: 't2', status: 'paid', products },
      ),
    ).toBe(true);
    const [t1, t2] = await h.records(DEFAULT_ACCOUNT, ['t1', 't2']);
    expect(t1?.lastUpdated).toBe(T0 + 5_000);
    expect(t1?.payments).toEqual([[T0 + 5_000, ['status']]]);
    expect(statusChanges(t2!.entries)).toEqual([{ status: 'paid', at: T0 + 6_000, eventId: null }]);
  });

  it('sums statistics by interval and products by quantity and amount', async () => {
    const h = history(T0 + 3 * 60_000);
    h.apply(event('a', 'completed', T0 + 10_000, 'a1', 1.1, 3));
    h.apply(event('b', 'completed', T0 + 70_000, 'b1', 2.2, 1));
    h.apply(event('c', 'failed', T0 + 75_000, 'c1', 5, 1));
    const stats = await h.stats(
      statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 120_000), interval: 'MINUTE' }, T0),
    );
    expect(stats.buckets.map((b) => [b.count, b.totalSold])).toEqual([
      [1, 3.3],
      [2, 7.2],
    ]);
    expect(stats.totalSold).toBe(10.5);
    expect(stats.products).toEqual([{ productId: 'p1', productName: 'Water', quantity: 5, amount: 10.5 }]);
  });

  it('names a product as the latest interval of the range named it, whatever a later hour of the same day said', async () => {
    const h = history(T0 + 2 * 86_400_000);
    const named = (id: string, at: number, eventId: string, productName: string) => {
      const e = event(id, 'completed', at, eventId);
      const products = [{ ...e.products[0]!, productName }];
      return { ...e, products, transaction: { ...e.transaction, products } };
    };
    h.apply(named('a', T0 + 30 * 60_000, 'a1', 'Water'));
    // Sold after the range, on the same day, then moved to the next day: its sums leave that hour, its name stays.
    h.apply(named('b', T0 + 5 * 3_600_000, 'b1', 'Still water'));
    h.apply(named('b', T0 + 86_400_000, 'b2', 'Still water'));
    const stats = await h.stats(
      statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0 + 2 * 3_600_000), interval: 'HOUR' }, T0),
    );
    expect(stats.products).toEqual([{ productId: 'p1', productName: 'Water', quantity: 1, amount: 2 }]);
    // Summed by whole days where the range allows, by hours elsewhere: the same totals.
    const week = await h.stats(
      statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0 - 3 * 86_400_000), until: new Date(T0 + 2 * 86_400_000), interval: 'HOUR' }, T0),
    );
    expect(week.products).toEqual([{ productId: 'p1', productName: 'Still water', quantity: 2, amount: 4 }]);
    expect(week.count).toBe(2);
  });

  it('refuses bounds with BAD_USER_INPUT', () => {
    expect(() => recentQuery(DEFAULT_ACCOUNT, { first: 101 })).toThrow(/first must be from 0 to 100/);
    expect(() => recentQuery(DEFAULT_ACCOUNT, { after: 'nope' })).toThrow(/not a cursor/);
    expect(() => recentQuery(DEFAULT_ACCOUNT, { since: new Date(T0), until: new Date(T0) })).toThrow(/since must be before until/);
    expect(() => statsQuery(DEFAULT_ACCOUNT, { since: new Date(0), interval: 'MINUTE' }, T0)).toThrow(/at most 1440/);
  });
});
