import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';

/*
 * REDIS_URL and DATABASE_URL: the history in PostgreSQL is fed from the log
 * in Redis through a consumer group. A Redis without persistence comes back
 * from a restart empty, without that group: the instance must re-create it
 * and go on feeding the history by itself, so every event acknowledged after
 * the restart is in the history, and readiness says when it is not fed.
 */

/** Only a safety net against a gateway that never recovers; nothing here measures speed. */
const GIVE_UP_MS = 20_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the PostgreSQL history across a Redis restart that lost everything', () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let running: RunningGateway;
  beforeAll(async () => {
    database = await testDatabase();
    redis = await startTestRedis();
    running = await startGateway(
      { REDIS_URL: redis.url, REDIS_PREFIX: `restart-${randomUUID()}:`, DATABASE_URL: database.url },
      {},
      (config) => ({
        ...config,
        postgresHistory: { ...config.postgresHistory, retryMs: 100 },
      }),
    );
  });
  afterAll(async () => {
    await running?.close();
    await redis?.close();
    await database?.drop();
  });

  /** Sends one webhook until it is answered 200 (a 503 while Redis is away is the sender's cue to retry); returns once acknowledged. */
  async function acknowledge(transactionId: string, status: string, id: string): Promise<void> {
    const request = buildWebhookRequest({
      form: 'enveloped',
      id,
      transaction: { transactionId, status, products: [{ productId: 'p1', productName: 'Water', productPrice: 2, quantity: 1 }] },
    });
    for (const deadline = Date.now() + GIVE_UP_MS; Date.now() < deadline; await sleep(50)) {
      const answer = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
      await answer.arrayBuffer();
      if (answer.status === 200) return;
      expect(answer.status, `webhook ${id}`).toBe(503);
    }
    throw new Error(`webhook ${id} was never acknowledged`);
  }

  async function historyStatuses(): Promise<Map<string, string>> {
    const query = 'query { recentTransactions(first: 100) { edges { node { transactionId status } } } }';
    const { body } = await postGraphQL(running.url, query, { key: TEST_KEY });
    const edges = (body.data?.recentTransactions.edges ?? []) as Array<{ node: { transactionId: string; status: string } }>;
    return new Map(edges.map(({ node }) => [node.transactionId, node.status]));
  }

  async function untilInHistory(expected: Map<string, string>): Promise<Map<string, string>> {
    let seen = new Map<string, string>();
    for (const deadline = Date.now() + GIVE_UP_MS; Date.now() < deadline; await sleep(100)) {
      seen = await historyStatuses();
      if ([...expected].every(([id, status]) => seen.get(id) === status)) break;
    }
    return seen;
  }

  const fedMetric = async () =>
    /^vending_gateway_readiness_check\{check="history"\} (\S+)$/m.exec(await (await fetch(`${running.url}/metrics`)).text())?.[1];
  const readyz = async () => (await (await fetch(`${running.url}/readyz`)).json()) as { checks?: Record<string, boolean> };

  it('feeds the history again by itself: every event acknowledged after the restart is applied', async () => {
    const run = randomUUID().slice(0, 8);
    const before = new Map([0, 1, 2].map((n) => [`before-${run}-${n}`, 'completed']));
    for (const [transactionId, status] of before) await acknowledge(transactionId, status, `${transactionId}-e`);
    expect(Object.fromEntries(await untilInHistory(before))).toMatchObject(Object.fromEntries(before));

    await redis.stop();
    // While events cannot reach the history, readiness and the metric say so.
    let notFed = false;
    for (const deadline = Date.now() + GIVE_UP_MS; !notFed && Date.now() < deadline; await sleep(50))
      notFed = (await readyz()).checks?.history === false;
    expect(notFed).toBe(true);
    expect(await fedMetric()).toBe('0');
    await redis.start();

    const after = new Map<string, string>();
    for (let n = 0; n < 6; n += 1) {
      const transactionId = `after-${run}-${n}`;
      await acknowledge(transactionId, 'pending', `${transactionId}-1`);
      await acknowledge(transactionId, 'completed', `${transactionId}-2`);
      after.set(transactionId, 'completed');
    }
    const seen = await untilInHistory(after);
    expect(Object.fromEntries([...after].map(([id]) => [id, seen.get(id)]))).toEqual(Object.fromEntries(after));
    expect((await readyz()).checks?.history).toBe(true);
    expect(await fedMetric()).toBe('1');
  }, 60_000);
});
