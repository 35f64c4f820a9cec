import { describe, expect, it, type TestContext } from 'vitest';
import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import { recentQuery, type RecentArgs } from '../../src/history/history-queries.js';
import type { HistoryStore } from '../../src/history/history-store.js';
import { historyEvent as event } from '../helpers/history-events.js';
import { postgresHistoryDeployment } from '../helpers/postgres.js';

/*
 * The recent pages an instance of the PostgreSQL history keeps (src/postgres/recent-pages.ts): a page kept is
 * handed out again only while the account's change marker is the one read with it, and its records are within
 * retention. Each case shows a change the page kept must not hide: one made by another instance, by a sweep, by a
 * hand edit of the table, by time alone; and that a page kept is one account's only.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const WEEK = 7 * 86_400_000;
/** As GraphQL asks when `totalCount` is not selected (the marker is then checked alone), and when it is. */
const page = (store: HistoryStore, args: RecentArgs = {}, account = DEFAULT_ACCOUNT, withTotal = false) =>
  store.recent(recentQuery(account, { first: 2, ...args }, withTotal));
const ids = async (read: ReturnType<typeof page>) => (await read).records.map((r) => r.transactionId);

async function start(ctx: TestContext) {
  let now = T0 + 60_000;
  const deployment = await postgresHistoryDeployment();
  ctx.onTestFinished(() => deployment.close());
  const options = { retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => now };
  const [here, elsewhere] = [await deployment.instance(options), await deployment.instance(options)];
  return { here, elsewhere, deployment, advance: (ms: number) => (now += ms) };
}

describe.concurrent('recent pages kept by a PostgreSQL history instance', () => {
  it('hands out the same records again while nothing changed, and the new page once another instance applied an event', async (ctx) => {
    const { here, elsewhere } = await start(ctx);
    await here.apply(event('t1', 'pending', T0, 'e1'));
    await here.apply(event('t2', 'pending', T0 + 1_000, 'e2'));
    const first = await page(here);
    expect((await page(here)).records).toBe(first.records);
    // Another instance's change, counted or not, paged from the start or after a cursor.
    await elsewhere.apply(event('t3', 'completed', T0 + 2_000, 'e3'));
    expect(await ids(page(here))).toEqual(['t3', 't2']);
    await elsewhere.apply(event('t1', 'completed', T0 + 3_000, 'e4'));
    expect(await page(here, {}, DEFAULT_ACCOUNT, true)).toMatchObject({ totalCount: 3, hasNextPage: true });
    expect(await ids(page(here))).toEqual(['t1', 't3']);
    await elsewhere.notePayment({ account: DEFAULT_ACCOUNT, transactionId: 't2', fields: ['status'], at: T0 + 4_000 });
    expect(await ids(page(here))).toEqual(['t2', 't1']);
  });

  it('sees records deleted by a sweep of another instance, and by a hand edit of the table', async (ctx) => {
    const { here, elsewhere, deployment, advance } = await start(ctx);
    await here.apply(event('old', 'completed', T0 - 365 * 86_400_000, 'o1'));
    await here.apply(event('t1', 'completed', T0, 'e1'));
    expect(await ids(page(here))).toEqual(['t1', 'old']);
    // Past retention (both instances' clocks), swept by the other one: the page kept here would still hold it.
    advance(WEEK);
    await elsewhere.apply(event('t2', 'completed', T0 + 1_000, 'e2'));
    advance(2 * 60_000);
    expect(await elsewhere.sweep()).toBe(2);
    expect(await ids(page(here))).toEqual(['t2']);
    await deployment.admin.query("DELETE FROM history_transactions WHERE transaction_id = 't2'");
    expect(await ids(page(here))).toEqual([]);
    await here.apply(event('t3', 'completed', T0 + 2_000, 't3'));
    await deployment.admin.query('TRUNCATE history_transactions');
    expect(await ids(page(here))).toEqual([]);
  });

  it('gives up a page kept once one of its records, or the one after it, passes retention', async (ctx) => {
    const { here, advance } = await start(ctx);
    await here.apply(event('a', 'completed', T0, 'a1'));
    advance(60_000);
    await here.apply(event('b', 'completed', T0 + 1_000, 'b1'));
    advance(60_000);
    await here.apply(event('c', 'completed', T0 + 2_000, 'c1'));
    expect(await page(here)).toMatchObject({ hasNextPage: true });
    expect(await ids(page(here))).toEqual(['c', 'b']);
    // `a` (the one after the page) passes retention: no next page any more, though nothing was written.
    advance(WEEK - 2 * 60_000 + 1);
    expect(await page(here)).toMatchObject({ hasNextPage: false });
    advance(60_000);
    expect(await ids(page(here))).toEqual(['c']);
  });

  it('shares a statement among the reads waiting at once, each of which sees the change made before it began', async (ctx) => {
    const { elsewhere, deployment } = await start(ctx);
    const pool = deployment.pool();
    const sent: string[] = [];
    const query = pool.query.bind(pool);
    pool.query = ((config: { name?: string }, ...rest: unknown[]) => {
      if (typeof config === 'object' && config.name?.startsWith('vg_history_'))
        sent.push(config.name === 'vg_history_marker' ? 'marker' : 'page');
      return (query as (...args: unknown[]) => unknown)(config, ...rest);
    }) as typeof pool.query;
    const here = await deployment.instance({ retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], now: () => T0 + 60_000 }, pool);
    await elsewhere.apply(event('t1', 'pending', T0, 'e1'));
    expect(await ids(page(here))).toEqual(['t1']);
    expect(sent).toEqual(['page']);
    await elsewhere.apply(event('t2', 'pending', T0 + 1_000, 'e2'));
    // Ten at once: the first looks at the marker, the nine others share the next look (sent after they all began);
    // then the first reads the page it found changed, and the others share the next reading.
    sent.length = 0;
    const reads = await Promise.all(Array.from({ length: 10 }, () => ids(page(here))));
    expect(reads).toEqual(Array.from({ length: 10 }, () => ['t2', 't1']));
    expect(sent.filter((name) => name === 'marker')).toHaveLength(2);
    // Two or three: whether the first reading was answered before the others looked.
    expect(sent.filter((name) => name === 'page').length).toBeLessThanOrEqual(3);
    // A read under way while an event is applied may show it or not; one beginning after it was applied shows it.
    const during = ids(page(here));
    await elsewhere.apply(event('t3', 'pending', T0 + 2_000, 'e3'));
    const after = ids(page(here));
    expect([
      ['t2', 't1'],
      ['t3', 't2'],
    ]).toContainEqual(await during);
    expect(await after).toEqual(['t3', 't2']);
  });

  it("keeps a page for one account: another account's change leaves it, and another account never gets it", async (ctx) => {
    const { here, elsewhere } = await start(ctx);
    await here.apply({ ...event('t1', 'pending', T0, 'e1'), account: 'acme' });
    await here.apply({ ...event('t2', 'pending', T0, 'e2'), account: 'zeta' });
    const acme = await page(here, {}, 'acme');
    expect(acme.records.map((r) => r.transactionId)).toEqual(['t1']);
    expect(await ids(page(here, {}, 'zeta'))).toEqual(['t2']);
    expect(await ids(page(here, {}, 'never'))).toEqual([]);
    await elsewhere.apply({ ...event('t3', 'pending', T0, 'e3'), account: 'zeta' });
    expect((await page(here, {}, 'acme')).records).toBe(acme.records);
    expect(await ids(page(here, {}, 'zeta'))).toEqual(['t3', 't2']);
    await elsewhere.apply({ ...event('t4', 'pending', T0, 'e4'), account: 'never' });
    expect(await ids(page(here, {}, 'never'))).toEqual(['t4']);
  });
});
