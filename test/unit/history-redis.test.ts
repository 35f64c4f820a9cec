import { describe, expect, it, type TestContext } from 'vitest';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { statusChanges, type HistoryRecord } from '../../src/history/history-record.js';
import { encodeRecentCursor, recentQuery, statsQuery } from '../../src/history/history-queries.js';
import type { HistoryOptions } from '../../src/history/history-store.js';
import { createMemoryHistory } from '../../src/history/memory-history.js';
import { historyEvent } from '../helpers/history-events.js';
import { createRedisHistory } from '../../src/redis/redis-history.js';
import { historyDeployment, type HistoryDeployment } from '../helpers/redis-history.js';

/*
 * The cases of history-memory.test.ts against the Redis store, every event
 * published through a Redis event log that applies it in its append script
 * (the path an instance takes); then what only Redis has: instances sharing
 * it, and a restart.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const WEEK = 7 * 86_400_000;

const event = historyEvent;

const all = (args = {}) => recentQuery({ first: 100, ...args });
const options = (now: () => number, maxTransactions = 100_000): HistoryOptions => ({ maxTransactions, retentionMs: WEEK, soldStatuses: [], now });

/** One instance of a new deployment; event ids get the deployment's prefix (the log remembers ids for a day). */
async function start(ctx: TestContext, now = () => T0 + 60_000, maxTransactions = 100_000) {
  const deployment: HistoryDeployment = await historyDeployment();
  ctx.onTestFinished(() => deployment.close());
  const instance = await deployment.instance(options(now, maxTransactions));
  const apply = (e: TransactionUpdateEvent) => instance.publish({ ...e, eventId: `${deployment.prefix}${e.eventId}` });
  return { ...instance, deployment, apply, size: () => deployment.commands.zcard(`${deployment.prefix}history:all`) };
}

describe.concurrent('Redis history', () => {
  it('applies each distinct event once and never moves back to an older state', async (ctx) => {
    const h = await start(ctx);
    await h.apply(event('t1', 'pending', T0, 'e1'));
    await h.apply(event('t1', 'completed', T0 + 2_000, 'e3'));
    expect(await h.apply(event('t1', 'pending', T0, 'e1'))).toBe(false); // redelivered
    await h.apply(event('t1', 'active', T0 + 1_000, 'e2')); // late
    const [record] = await h.history.records(['t1']);
    expect(record?.status).toBe('completed');
    expect(statusChanges(record!.entries).map((c) => c.status)).toEqual(['pending', 'active', 'completed']);
    expect(record?.firstSeen).toBe(T0);
    expect(record?.lastUpdated).toBe(T0 + 2_000);
    const stats = await h.history.stats(statsQuery({ since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect(stats.count).toBe(1);
    expect(stats.byStatus).toEqual([{ status: 'completed', count: 1, total: 2 }]);
    expect(stats.totalSold).toBe(2);
  });

  it('keeps a status that comes back (flip-flop) and collapses repeats of one status', async (ctx) => {
    const h = await start(ctx);
    for (const [i, status] of ['pending', 'pending', 'completed', 'pending'].entries()) await h.apply(event('t1', status, T0 + i * 1_000, `e${i}`));
    const [record] = await h.history.records(['t1']);
    expect(record?.status).toBe('pending');
    const prefix = h.deployment.prefix;
    expect(statusChanges(record!.entries).map((c) => [c.status, c.eventId])).toEqual([['pending', `${prefix}e0`], ['completed', `${prefix}e2`], ['pending', `${prefix}e3`]]);
  });

  it('pages newest-updated first with cursors that survive updates between pages', async (ctx) => {
    const h = await start(ctx);
    for (let i = 0; i < 10; i += 1) await h.apply(event(`t${i}`, i % 2 ? 'pending' : 'completed', T0 + i * 1_000, `e${i}`));
    const first = await h.history.recent(all({ first: 4 }));
    expect(first.records.map((r) => r.transactionId)).toEqual(['t9', 't8', 't7', 't6']);
    expect(first.hasNextPage).toBe(true);
    expect(first.totalCount).toBe(10);
    await h.apply(event('t2', 'completed', T0 + 20_000, 'late'));
    const last = first.records.at(-1)!;
    const second = await h.history.recent(all({ first: 10, after: encodeRecentCursor(last) }));
    expect(second.records.map((r) => r.transactionId)).toEqual(['t5', 't4', 't3', 't1', 't0']);
    expect(second.hasNextPage).toBe(false);
    const pending = await h.history.recent(all({ status: ['pending'] }));
    expect(pending.records.map((r) => r.transactionId)).toEqual(['t9', 't7', 't5', 't3', 't1']);
    const merged = await h.history.recent(all({ status: ['pending', 'completed'], first: 3 }));
    expect(merged.records.map((r) => r.transactionId)).toEqual(['t2', 't9', 't8']);
    const window = await h.history.recent(all({ since: new Date(T0 + 3_000), until: new Date(T0 + 6_000) }));
    expect(window.records.map((r) => r.transactionId)).toEqual(['t5', 't4', 't3']);
    expect(window.totalCount).toBe(3);
  });

  it('drops the least recently updated past HISTORY_MAX_TRANSACTIONS, taking their sums back', async (ctx) => {
    const h = await start(ctx, () => T0 + 60_000, 3);
    for (let i = 0; i < 5; i += 1) await h.apply(event(`t${i}`, 'completed', T0 + i * 1_000, `e${i}`));
    expect(await h.size()).toBe(3);
    expect((await h.history.records(['t0', 't1', 't2'])).map((r) => r?.transactionId)).toEqual([undefined, undefined, 't2']);
    const stats = await h.history.stats(statsQuery({ since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect(stats.count).toBe(3);
  });

  it('says from when it covers: its first write, then after the last update dropped for the count, then now − HISTORY_RETENTION', async (ctx) => {
    let now = T0;
    const h = await start(ctx, () => now, 2);
    await h.apply(event('old', 'completed', T0 - 10_000, 'o1'));
    now = T0 + 500;
    // The first write set the start; a later instance reads the same.
    expect(await h.history.coveredSince()).toBe(T0);
    const later = await h.deployment.instance(options(() => now, 2));
    expect(await later.history.coveredSince()).toBe(T0);
    for (let i = 0; i < 3; i += 1) await h.apply(event(`t${i}`, 'completed', T0 + 1_000 + i * 1_000, `e${i}`));
    expect(await h.history.coveredSince()).toBe(T0 + 1_001);
    now = T0 + WEEK + 5_000;
    expect(await h.history.coveredSince()).toBe(T0 + 5_000);
  });

  it('starts coverage when first asked if nothing was written yet', async (ctx) => {
    let now = T0;
    const h = await start(ctx, () => now);
    expect(await h.history.coveredSince()).toBe(T0);
    now += 60_000;
    expect(await h.history.coveredSince()).toBe(T0);
  });

  it('keeps events with old timestamps, and forgets a record HISTORY_RETENTION after the gateway last changed it', async (ctx) => {
    let now = T0;
    const h = await start(ctx, () => now, 100);
    await h.apply(event('old', 'completed', T0 - 365 * 86_400_000, 'o1'));
    expect((await h.history.recent(all())).records.map((r) => r.transactionId)).toEqual(['old']);
    now += WEEK - 1_000;
    await h.apply(event('new', 'completed', now, 'n1'));
    now += 2 * 60_000;
    expect((await h.history.records(['old', 'new'])).map((r) => r?.transactionId)).toEqual([undefined, 'new']);
    const page = await h.history.recent(all());
    expect(page.records.map((r) => r.transactionId)).toEqual(['new']);
    expect(page.totalCount).toBe(1);
    const stats = await h.history.stats(statsQuery({ since: new Date(T0 - 366 * 86_400_000), until: new Date(now), interval: 'DAY' }, now));
    expect(stats.count).toBe(1);
  });

  it('shows nothing past retention even while more of it is left than one read drops', async (ctx) => {
    let now = T0;
    const h = await start(ctx, () => now, 1_000);
    for (let i = 0; i < 205; i += 1) await h.apply(event(`t${i}`, 'completed', T0 + i, `e${i}`));
    now += WEEK + 1;
    const page = await h.history.recent(all({ first: 3 }));
    expect(page.records).toEqual([]);
    expect(page.hasNextPage).toBe(false);
    expect((await h.history.records(['t204'])).map((r) => r?.transactionId)).toEqual([undefined]);
    expect((await h.history.recent(all())).totalCount).toBe(0);
    expect(await h.size()).toBe(0);
  });

  it('records payment updates, and starts a record from a read-back transaction', async (ctx) => {
    const h = await start(ctx);
    await h.apply(event('t1', 'pending', T0, 'e1'));
    expect(await h.history.notePayment({ transactionId: 't1', fields: ['status'], at: T0 + 5_000 })).toBe(true);
    expect(await h.history.notePayment({ transactionId: 't2', fields: ['status'], at: T0 + 5_000 })).toBe(false);
    const products = [{ productId: 'p1', productPrice: 1, quantity: 2 }];
    expect(await h.history.notePayment({ transactionId: 't2', fields: ['status'], at: T0 + 6_000 }, { transactionId: 't2', status: 'paid', products })).toBe(true);
    const [t1, t2] = await h.history.records(['t1', 't2']);
    expect(t1?.lastUpdated).toBe(T0 + 5_000);
    expect(t1?.payments).toEqual([[T0 + 5_000, ['status']]]);
    expect(statusChanges(t2!.entries)).toEqual([{ status: 'paid', at: T0 + 6_000, eventId: null }]);
  });

  it('sums statistics by interval and products by quantity and amount', async (ctx) => {
    const h = await start(ctx, () => T0 + 3 * 60_000);
    await h.apply(event('a', 'completed', T0 + 10_000, 'a1', 1.1, 3));
    await h.apply(event('b', 'completed', T0 + 70_000, 'b1', 2.2, 1));
    await h.apply(event('c', 'failed', T0 + 75_000, 'c1', 5, 1));
    const stats = await h.history.stats(statsQuery({ since: new Date(T0), until: new Date(T0 + 120_000), interval: 'MINUTE' }, T0));
    expect(stats.buckets.map((b) => [b.count, b.totalSold])).toEqual([[1, 3.3], [2, 7.2]]);
    expect(stats.totalSold).toBe(10.5);
    expect(stats.products).toEqual([{ productId: 'p1', productName: 'Water', quantity: 5, amount: 10.5 }]);
  });

  it('answers a record exactly as the in-process store holds it (seq aside)', async (ctx) => {
    const h = await start(ctx);
    const memory = createMemoryHistory(options(() => T0 + 60_000));
    const series = [event('t1', 'pending', T0, 'e1', 1.25, 3), event('t1', 'completed', T0 + 2_000, 'e2', 1.25, 3), event('t1', 'pending', T0 + 1_000, 'e3')];
    for (const e of series) {
      await h.apply(e);
      memory.apply!({ ...e, eventId: `${h.deployment.prefix}${e.eventId}` });
    }
    const note = { transactionId: 't1', fields: ['paymentMethod', 'status'], at: T0 + 3_000 };
    expect(await h.history.notePayment(note)).toBe(await memory.notePayment(note));
    const [fromRedis] = await h.history.records(['t1']);
    const [fromMemory] = await memory.records(['t1']);
    expect(fromRedis).toEqual(fromMemory);
  });

  it('keeps the last MAX_ENTRIES events and MAX_PAYMENTS payments of a transaction, as in process', async (ctx) => {
    const h = await start(ctx);
    const memory = createMemoryHistory(options(() => T0 + 60_000));
    // Times go back and forth so that what is dropped is the oldest by time, not by arrival.
    for (let i = 0; i < 105; i += 1) {
      const e = event('t1', i % 3 ? 'pending' : 'completed', T0 + ((i * 7) % 50) * 1_000, `e${i}`);
      await h.apply(e);
      memory.apply!({ ...e, eventId: `${h.deployment.prefix}${e.eventId}` });
    }
    for (let i = 0; i < 25; i += 1) {
      const note = { transactionId: 't1', fields: [`f${i}`], at: T0 + ((i * 11) % 30) * 1_000 };
      await h.history.notePayment(note);
      await memory.notePayment(note);
    }
    const [fromRedis] = await h.history.records(['t1']);
    const [fromMemory] = await memory.records(['t1']);
    expect(fromRedis!.entries).toHaveLength(100);
    expect(fromRedis!.payments).toHaveLength(20);
    const withoutSeq = (r: HistoryRecord) => ({ ...r, latest: r.latest[0], entries: r.entries.map(([time, , status, id]) => [time, status, id]) });
    expect(withoutSeq(fromRedis!)).toEqual(withoutSeq(fromMemory!));
  });

  it('never takes a contribution back from a bucket that expired (no negative sums)', async (ctx) => {
    // Buckets live retention (real time) after their last change; the gateway's clock stands still, so the record stays.
    const deployment = await historyDeployment();
    ctx.onTestFinished(() => deployment.close());
    const h = await deployment.instance({ ...options(() => T0 + 600_000), retentionMs: 100 });
    await h.publish({ ...event('t1', 'completed', T0, 'e1'), eventId: `${deployment.prefix}e1` });
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await deployment.commands.exists(`${deployment.prefix}history:m${T0}`)).toBe(0);
    await h.publish({ ...event('t1', 'completed', T0 + 120_000, 'e2'), eventId: `${deployment.prefix}e2` });
    expect(await deployment.commands.exists(`${deployment.prefix}history:m${T0}`)).toBe(0);
    const stats = await h.history.stats(statsQuery({ since: new Date(T0), until: new Date(T0 + 180_000) }, T0));
    expect(stats.buckets.map((b) => [b.count, b.totalSold])).toEqual([[0, 0], [0, 0], [1, 2]]);
  });

  it('applies an event once when two instances receive it, and keeps time ties in id order across pages', async (ctx) => {
    const h = await start(ctx);
    const other = await h.deployment.instance(options(() => T0 + 60_000));
    const e = { ...event('t1', 'pending', T0, 'twice'), eventId: `${h.deployment.prefix}twice` };
    expect(await Promise.all([h.publish(e), other.publish(e)])).toEqual(expect.arrayContaining([true, false]));
    // Ten transactions updated in one millisecond: pages walk them by id, descending, even when the cursor's own record moves away.
    for (let i = 0; i < 10; i += 1) await h.apply(event(`tie${i}`, 'completed', T0 + 5_000, `tie${i}`));
    const firstPage = await other.history.recent(all({ first: 3 }));
    expect(firstPage.records.map((r) => r.transactionId)).toEqual(['tie9', 'tie8', 'tie7']);
    await h.apply(event('tie7', 'completed', T0 + 9_000, 'tie7-later'));
    const next = await other.history.recent(all({ first: 3, after: encodeRecentCursor(firstPage.records.at(-1)!) }));
    expect(next.records.map((r) => r.transactionId)).toEqual(['tie6', 'tie5', 'tie4']);
    const [record] = await h.history.records(['t1']);
    expect(record?.entries).toHaveLength(1);
    const stats = await h.history.stats(statsQuery({ since: new Date(T0), until: new Date(T0 + 60_000) }, T0));
    expect(stats.count).toBe(11);
  });

  it('ignores an event the record already holds even when another event log admitted it', async (ctx) => {
    const h = await start(ctx);
    const elsewhere = await h.deployment.instance(options(() => T0 + 60_000), `${h.deployment.prefix}elsewhere:`);
    const e = { ...event('t1', 'completed', T0, 'e1'), eventId: `${h.deployment.prefix}e1` };
    expect(await h.publish(e)).toBe(true);
    expect(await elsewhere.publish(e)).toBe(true);
    const [record] = await h.history.records(['t1']);
    expect(record?.entries).toHaveLength(1);
    expect((await h.history.stats(statsQuery({ since: new Date(T0), until: new Date(T0 + 60_000) }, T0))).byStatus).toEqual([{ status: 'completed', count: 1, total: 2 }]);
  });

  it('publishes an event the history cannot take (a key of its in use for something else)', async (ctx) => {
    const h = await start(ctx);
    await h.deployment.commands.set(`${h.deployment.prefix}history:all`, 'not a sorted set');
    expect(await h.apply(event('t1', 'completed', T0, 'e1'))).toBe(true);
    await h.deployment.commands.del(`${h.deployment.prefix}history:all`);
    expect(await h.apply(event('t2', 'completed', T0, 'e2'))).toBe(true);
    expect((await h.history.records(['t2'])).map((r) => r?.status)).toEqual(['completed']);
  });

  it('reads after a restart what the instance before it wrote', async (ctx) => {
    const h = await start(ctx);
    await h.apply(event('t1', 'completed', T0, 'e1'));
    await h.history.notePayment({ transactionId: 't1', fields: ['status'], at: T0 + 1_000 });
    const [before] = await h.history.records(['t1']);
    const restarted = createRedisHistory(h.deployment.commands, { ...options(() => T0 + 60_000), prefix: h.deployment.prefix });
    expect(await restarted.records(['t1'])).toEqual([before]);
    expect((await restarted.recent(all())).records).toEqual([before]);
    expect((await restarted.stats(statsQuery({ since: new Date(T0), until: new Date(T0 + 60_000) }, T0))).count).toBe(1);
  });
});
