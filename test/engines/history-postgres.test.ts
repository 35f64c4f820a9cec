import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import {
  RecentTransactionsDocument,
  TransactionHistoryDocument,
  TransactionStatsDocument,
} from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { historyScenario } from '../helpers/history-scenario.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { deliverWebhook, redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { runOperation } from '../helpers/typed-client.js';

/*
 * The history in PostgreSQL (DATABASE_URL) over real HTTP: the series of
 * webhooks the other stores pass, on one instance and on two that share a
 * Redis and a database; an instance started afterwards reads it all at once.
 * Each describe has a database of its own, migrated by the gateways' start.
 */

/** Resolves once every instance applied what its log admitted (a shared queue: what any instance admitted). */
const settled = (gateways: RunningGateway[]) => async () => {
  for (const gateway of gateways) {
    let pending = Number.NaN;
    for (let tries = 0; tries < 500 && pending !== 0; tries += 1) {
      pending = (await gateway.gateway.app.historyFeed?.pending()) ?? Number.NaN;
      if (pending !== 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(pending).toBe(0);
  }
};

describe('transaction history in PostgreSQL, one instance', () => {
  let database: TestDatabase;
  let gateway: RunningGateway;
  beforeAll(async () => {
    database = await testDatabase();
    gateway = await startGateway({ DATABASE_URL: database.url });
  });
  afterAll(async () => {
    await gateway?.close();
    await database?.drop();
  });

  it('holds what a series of webhooks with redeliveries, late events and flip-flops says, and payment updates', async () => {
    expect(gateway.gateway.app.historyFeed).toBeDefined();
    await historyScenario([gateway], async (request) => (await deliverWebhook(gateway, request)).status, settled([gateway]));
  });

  it('counts whenever totalCount is selected, through fragments too, and pages alike whether it is or not', async () => {
    const post = async (query: string) => {
      const response = await fetch(`${gateway.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY },
        body: JSON.stringify({ query }),
      });
      return (await response.json()) as {
        data?: { recentTransactions: { totalCount?: number; nodes?: Array<{ transactionId: string }> } };
        errors?: unknown;
      };
    };
    const plain = await post('{ recentTransactions(first: 100) { totalCount nodes { transactionId status total } } }');
    expect(plain.errors).toBeUndefined();
    expect(plain.data!.recentTransactions.totalCount).toBeGreaterThan(0);
    const spread = await post(
      '{ recentTransactions(first: 100) { ...Counted } } ' +
        'fragment Counted on TransactionConnection { ... on TransactionConnection { totalCount } }',
    );
    expect(spread).toEqual({ data: { recentTransactions: { totalCount: plain.data!.recentTransactions.totalCount } } });
    const uncounted = await post('{ recentTransactions(first: 100) { nodes { transactionId status total } } }');
    expect(uncounted).toEqual({ data: { recentTransactions: { nodes: plain.data!.recentTransactions.nodes } } });
  });
});

describe('transaction history in PostgreSQL, shared by instances on one Redis', () => {
  let database: TestDatabase;
  let deployments: RedisDeployments;
  beforeAll(async () => {
    database = await testDatabase();
    deployments = await redisDeployments();
  });
  afterAll(async () => {
    await deployments?.close();
    await database?.drop();
  });

  it('says the same on two instances, whichever received each webhook, and after a restart', async () => {
    const env = { DATABASE_URL: database.url, REDIS_PREFIX: `history-${randomUUID()}:` };
    const instances = await deployments.start(2, env);
    await historyScenario(
      instances,
      async (request, index = 0) => (await deliverWebhook(instances[index % 2]!, request)).status,
      settled(instances),
    );
    const before = await runOperation(instances[0]!.url, RecentTransactionsDocument, { first: 100 });
    expect(before.data?.recentTransactions.totalCount).toBe(3);
    // Another Redis prefix too: nothing of the history is in Redis.
    const [restarted] = await deployments.start(1, { ...env, REDIS_PREFIX: `history-${randomUUID()}:` });
    const after = await runOperation(restarted!.url, RecentTransactionsDocument, { first: 100 });
    expect(after.data).toEqual(before.data);
  });
});

/** A gateway whose history reaches its own database through a TCP proxy a test can cut (`proxy.cut()`) and mend (`reconnect()`). */
async function behindProxy(tune?: (config: Config) => Config) {
  const database = await testDatabase();
  const direct = `http://${new URL(database.url).hostname}:${new URL(database.url).port || 5432}`;
  const proxy = await startTcpProxy(direct);
  const throughProxy = new URL(database.url);
  throughProxy.port = new URL(proxy.url).port;
  const gateway = await startGateway({ DATABASE_URL: throughProxy.toString() }, {}, tune);
  return {
    database,
    proxy,
    gateway,
    reconnect: () => proxy.target(direct),
    async close() {
      await gateway.close();
      await proxy.close();
      await database.drop();
    },
  };
}

describe('transaction history while PostgreSQL does not answer', () => {
  let setup: Awaited<ReturnType<typeof behindProxy>>;
  let proxy: TcpProxy;
  let gateway: RunningGateway;
  beforeAll(async () => {
    setup = await behindProxy();
    ({ proxy, gateway } = setup);
  });
  afterAll(() => setup?.close());

  const request = (transactionId: string, status: string, id: string) =>
    buildWebhookRequest({
      form: 'enveloped',
      id,
      transaction: { transactionId, status, products: [{ productId: 'p1', productName: 'Water', productPrice: 2, quantity: 1 }] },
    });
  /** One try, as a sender's first. */
  const tryOnce = (transactionId: string, status: string, id: string) => {
    const { headers, body } = request(transactionId, status, id);
    return fetch(`${gateway.url}/webhooks`, { method: 'POST', headers, body });
  };
  /** As the service sends: again after each 503, until acknowledged. */
  const post = async (transactionId: string, status: string, id: string) =>
    (await deliverWebhook(gateway, request(transactionId, status, id))).status;
  const checks = async () => ((await (await fetch(`${gateway.url}/readyz`)).json()) as { checks: Record<string, boolean> }).checks;

  it('refuses webhooks with 503 while it cannot commit them, serves the rest, then keeps each retry once', async () => {
    const run = randomUUID().slice(0, 8);
    const [t1, t2] = [`t1-${run}`, `t2-${run}`];
    expect(await post(t1, 'pending', `${run}-1`)).toBe(200);
    await settled([gateway])();
    expect((await checks()).history).toBe(true);

    proxy.cut();
    const live = await sseSubscribe(gateway.url, 'subscription { transactionUpdated { eventId } }', TEST_KEY);
    // The database is where this deployment keeps its events: no 200, and nothing published, before a commit.
    for (const [transactionId, status, id] of [
      [t1, 'completed', `${run}-2`],
      [t2, 'pending', `${run}-3`],
      [t1, 'completed', `${run}-2`],
    ] as const) {
      const refused = await tryOnce(transactionId, status, id);
      expect(refused.status, id).toBe(503);
      expect(refused.headers.get('retry-after'), id).not.toBeNull();
    }

    const recent = await runOperation(gateway.url, RecentTransactionsDocument, {});
    expect(recent.errors?.map((e) => [e.extensions?.code, e.message])).toEqual([
      ['UPSTREAM_UNAVAILABLE', 'The transaction history cannot be read right now (its store does not answer); retry later'],
    ]);
    // The transaction itself is served (the memory backend learned it from the first webhook); only its history is missing.
    const detail = await runOperation(gateway.url, TransactionHistoryDocument, { id: t1 });
    expect(detail.data?.transaction).toMatchObject({ transactionId: t1, status: 'pending', history: null });
    let ready = await checks();
    for (let tries = 0; ready.history !== false && tries < 100; tries += 1)
      ready = (await new Promise((resolve) => setTimeout(resolve, 50)), await checks());
    expect(ready.history).toBe(false);
    // Named, but not what readiness hangs on: the instance still serves everything else, so a load balancer keeps it.
    const readyz = await fetch(`${gateway.url}/readyz`);
    expect(readyz.status).toBe(200);
    expect(((await readyz.json()) as { status: string }).status).toBe('ready');

    setup.reconnect();
    // The sender's retries, the redelivery too: each kept and published once, in order.
    expect(await post(t1, 'completed', `${run}-2`)).toBe(200);
    expect(await post(t2, 'pending', `${run}-3`)).toBe(200);
    expect(await post(t1, 'completed', `${run}-2`)).toBe(200);
    expect((await live.next(10_000)).data.transactionUpdated.eventId).toBe(`${run}-2`);
    expect((await live.next(10_000)).data.transactionUpdated.eventId).toBe(`${run}-3`);
    live.close();
    const after = await runOperation(gateway.url, RecentTransactionsDocument, { first: 10 });
    expect(after.data?.recentTransactions.edges.map((e) => [e.node.transactionId, e.node.status])).toEqual([
      [t2, 'pending'],
      [t1, 'completed'],
    ]);
    const history = await runOperation(gateway.url, TransactionHistoryDocument, { id: t1 });
    expect(history.data?.transaction?.history?.map((change) => change.eventId)).toEqual([`${run}-1`, `${run}-2`]);
    const stats = await runOperation(gateway.url, TransactionStatsDocument, {});
    expect(stats.data?.transactionStats.byStatus).toEqual([
      { status: 'completed', count: 1 },
      { status: 'pending', count: 1 },
    ]);
    // Totals are read per currency: these webhooks name none, so they are in DEFAULT_CURRENCY.
    expect(stats.data?.transactionStats.byCurrency.map((entry) => [entry.currency, entry.byStatus])).toEqual([
      [
        'EUR',
        [
          { status: 'completed', count: 1, total: 2 },
          { status: 'pending', count: 1, total: 2 },
        ],
      ],
    ]);
    for (let tries = 0; (await checks()).history !== true && tries < 100; tries += 1)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await checks()).history).toBe(true);
  });
});

describe('transaction history whose database is slower than the webhooks', () => {
  let setup: Awaited<ReturnType<typeof behindProxy>>;
  let proxy: TcpProxy;
  let gateway: RunningGateway;
  beforeAll(async () => {
    // At most two events waiting for their commit.
    setup = await behindProxy((config) => ({ ...config, postgresHistory: { ...config.postgresHistory, maxQueued: 2 } }));
    ({ proxy, gateway } = setup);
  });
  afterAll(() => setup?.close());

  it('refuses webhooks with 503 and Retry-After once as many wait as may, and loses none it acknowledged', async () => {
    const run = randomUUID().slice(0, 8);
    const request = (n: number) =>
      buildWebhookRequest({
        form: 'enveloped',
        id: `${run}-${n}`,
        transaction: { transactionId: `b${n}-${run}`, status: 'pending', products: [] },
      });
    // Once, as a sender's first try (deliverWebhook retries a 503 itself).
    const post = async (n: number) =>
      fetch(`${gateway.url}/webhooks`, { method: 'POST', headers: request(n).headers, body: request(n).body });
    expect((await post(0)).status).toBe(200);
    await settled([gateway])();
    proxy.cut();
    // Two wait for a database that does not answer; a third would be a third waiting: refused at once.
    const waiting = [post(1), post(2)];
    for (let tries = 0; (await gateway.gateway.app.historyFeed?.pending()) !== 2 && tries < 200; tries += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const refused = await post(3);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    setup.reconnect();
    // The two waiting are answered once the database answers (200), or refused by its timeout (503): never lost.
    const answered = await Promise.all(waiting.map(async (answer) => (await answer).status));
    for (const status of answered) expect([200, 503]).toContain(status);

    for (const n of [1, 2, 3]) expect((await deliverWebhook(gateway, request(n))).status).toBe(200);
    await settled([gateway])();
    const page = await runOperation(gateway.url, RecentTransactionsDocument, { first: 10 });
    expect(page.data?.recentTransactions.edges.map((e) => e.node.transactionId).sort()).toEqual(
      [0, 1, 2, 3].map((n) => `b${n}-${run}`).sort(),
    );
  });
});
