import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecentTransactionsDocument } from '../../src/graphql/generated/operations.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { historyScenario } from '../helpers/history-scenario.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { deliverWebhook, redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import { runOperation } from '../helpers/typed-client.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The history in PostgreSQL (DATABASE_URL) over real HTTP: the series of
 * webhooks the other stores pass, on one instance and on two that share a
 * Redis and a database; an instance started afterwards reads it all at once.
 * Each describe has a database of its own, migrated by the gateways' start.
 */

/** Resolves once every instance applied what its log admitted. */
const settled = (gateways: RunningGateway[]) => async () => {
  expect(await waitFor(() => gateways.every((g) => g.gateway.app.historyFeed?.pending() === 0), 10_000)).toBe(true);
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
    await historyScenario(instances, async (request, index = 0) => (await deliverWebhook(instances[index % 2]!, request)).status, settled(instances));
    const before = await runOperation(instances[0]!.url, RecentTransactionsDocument, { first: 100 });
    expect(before.data?.recentTransactions.totalCount).toBe(3);
    // Another Redis prefix too: nothing of the history is in Redis.
    const [restarted] = await deployments.start(1, { ...env, REDIS_PREFIX: `history-${randomUUID()}:` });
    const after = await runOperation(restarted!.url, RecentTransactionsDocument, { first: 100 });
    expect(after.data).toEqual(before.data);
  });
});
