import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startForwardGateway, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { accountsSeries, checkAccounts, postSeries, secretOf, watch, type Watcher } from '../helpers/accounts-scenario.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * Two accounts of the service behind one gateway: nothing of one reaches a
 * key of the other, live (graphql-ws and SSE), listed, counted or read. In
 * forward mode the service judges each key; with static keys each names its
 * account, here on two instances sharing a Redis and a PostgreSQL.
 */

describe('two accounts in forward mode: the service says which key reads what', () => {
  const KEYS = { a: 'key-of-account-a', b: 'key-of-account-b', d: 'key-of-an-account-without-webhooks' };
  let upstream: StandInUpstream;
  let gateway: RunningGateway;
  const watchers: Watcher[] = [];
  beforeAll(async () => {
    upstream = await startStandInUpstream({ keys: Object.values(KEYS), accounts: { [KEYS.a]: 'A', [KEYS.b]: 'B', [KEYS.d]: 'D' } });
    gateway = await startForwardGateway(upstream.url, { API_KEYS: '' });
  });
  afterAll(async () => {
    await Promise.all(watchers.map((watcher) => watcher.close()));
    await gateway?.close();
    await upstream?.close();
  });

  it('serves each key its account alone; the mixed plain path only transaction by transaction, and lists none of it', async () => {
    const world = {
      url: () => gateway.url,
      own(transactionId: string, account: 'a' | 'b') {
        upstream.transactions.push({ transactionId, status: 'pending', products: [] });
        upstream.transactionAccounts.set(transactionId, account === 'a' ? 'A' : 'B');
      },
    };
    const series = accountsSeries(world);
    const { ids } = series;
    watchers.push(...(await Promise.all([watch(gateway.url, KEYS.a), watch(gateway.url, KEYS.b), watch(gateway.url, KEYS.d)])));
    await postSeries(world, series);
    await checkAccounts(world, watchers, series, {
      live: { [KEYS.a]: [ids.a1, ids.a1, ids.a2, ids.aPlain, ids.aMarker], [KEYS.b]: [ids.b1, ids.bPlain, ids.bMarker], [KEYS.d]: [] },
      listed: {
        [KEYS.a]: { ids: [ids.a1, ids.a2, ids.aMarker], products: [secretOf('a')] },
        [KEYS.b]: { ids: [ids.b1, ids.bMarker], products: [secretOf('b')] },
        // Its account sends nothing to a path of its own: what came on the plain path may be anyone's.
        [KEYS.d]: 'FORBIDDEN',
      },
    });
  });
});

describe('two accounts with static keys, two instances sharing Redis and PostgreSQL', () => {
  const KEYS = { a: 'static-key-a', b: 'static-key-b', d: 'static-key-default' };
  let database: TestDatabase;
  let deployments: RedisDeployments;
  let instances: RunningGateway[];
  const watchers: Watcher[] = [];
  beforeAll(async () => {
    database = await testDatabase();
    deployments = await redisDeployments();
    const env = {
      DATABASE_URL: database.url,
      REDIS_PREFIX: `accounts-${randomUUID()}:`,
      API_KEYS: `${KEYS.a}:read+subscribe@acct-a,${KEYS.b}:read+subscribe@acct-b,${KEYS.d}:read+subscribe`,
    };
    instances = await deployments.start(2, env);
  });
  afterAll(async () => {
    await Promise.all(watchers.map((watcher) => watcher.close()));
    await deployments?.close();
    await database?.drop();
  });

  it('keeps each account apart on every instance; the plain path is the default account', async () => {
    const world = {
      url: (n: number) => instances[n % 2]!.url,
      // The instances apply what their logs admitted just after answering: wait until the shared queue is empty.
      async settle() {
        for (let tries = 0; tries < 500 && (await instances[0]!.gateway.app.historyFeed?.pending()) !== 0; tries += 1)
          await new Promise((resolve) => setTimeout(resolve, 20));
      },
    };
    const series = accountsSeries(world);
    const { ids } = series;
    watchers.push(...(await Promise.all([watch(world.url(0), KEYS.a), watch(world.url(1), KEYS.b), watch(world.url(1), KEYS.d)])));
    await postSeries(world, series);
    await checkAccounts(world, watchers, series, {
      live: { [KEYS.a]: [ids.a1, ids.a1, ids.a2, ids.aMarker], [KEYS.b]: [ids.b1, ids.bMarker], [KEYS.d]: [ids.aPlain, ids.bPlain] },
      listed: {
        [KEYS.a]: { ids: [ids.a1, ids.a2, ids.aMarker], products: [secretOf('a')] },
        [KEYS.b]: { ids: [ids.b1, ids.bMarker], products: [secretOf('b')] },
        [KEYS.d]: { ids: [ids.aPlain, ids.bPlain], products: [secretOf('a'), secretOf('b')] },
      },
    });
  });
  it("serves the demo service's transactions (the default account's) to the default account's keys alone", async () => {
    const DEMO = 'e96a1bb8-6da9-49e4-9881-15f7e15d33a3';
    const read = `{ transaction(id: "${DEMO}") { transactionId } }`;
    const pay =
      `mutation { updateTransactionPayment(transactionId: "${DEMO}", payment: { paymentStatus: "captured" }) ` +
      `{ transaction { transactionId } } }`;
    const PAYING = { a: 'paying-key-a', d: 'paying-key-default' };
    const [instance] = await deployments.start(1, { API_KEYS: `${PAYING.a}:read+pay@acct-a,${PAYING.d}:read+pay` });
    expect((await postGraphQL(instance!.url, read, { key: PAYING.d })).body.data).toEqual({ transaction: { transactionId: DEMO } });
    for (const query of [read, pay]) {
      const answer = await postGraphQL(instance!.url, query, { key: PAYING.a });
      expect(answer.body.errors?.[0]?.extensions?.code, query).toBe('NOT_FOUND');
    }
  });
});
