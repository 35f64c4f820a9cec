import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { waitForAsync } from '../helpers/redis-process.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The server an instance writes to becomes a read-only replica under its open
 * connections (REPLICAOF, as an operator or a failover tool does it without
 * closing them): every write answers READONLY. Readiness says 503 for as long
 * as that lasts and webhooks get 503, and both are 200 again once it is a
 * master again. Before, readiness followed the connection alone and said 200
 * throughout.
 */

describe.skipIf(!redisServerOnPath())('a Redis that becomes a read-only replica', () => {
  let primary: TestRedis;
  let other: TestRedis;
  let gateway: RunningGateway;
  let admin: Redis;
  const prefix = `read-only-${randomUUID().slice(0, 8)}:`;

  beforeAll(async () => {
    [primary, other] = await Promise.all([startTestRedis(), startTestRedis()]);
    gateway = await startGateway({ REDIS_URL: primary.url, REDIS_PREFIX: prefix });
    admin = new Redis(primary.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await gateway?.close();
    await Promise.all([primary?.close(), other?.close()]);
  });

  const webhook = async () => {
    const request = buildWebhookRequest({
      form: 'enveloped',
      id: `ro-${randomUUID()}`,
      transaction: { transactionId: 'tx-ro', status: `s-${randomUUID()}`, products: [] },
    });
    return (await fetch(`${gateway.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status;
  };
  const readyz = async () => (await fetch(`${gateway.url}/readyz`)).status;

  it('says 503 while it is a replica, refuses webhooks with 503, and is 200 again once it is a master', async () => {
    const client = wsClient(gateway.url, TEST_KEY);
    const sub = subscribe(client, 'subscription { transactionUpdated { eventId } }');
    expect(await waitFor(() => gateway.gateway.activeSubscriptions() === 1, 5_000)).toBe(true);
    expect(await readyz()).toBe(200);
    expect(await webhook()).toBe(200);

    await admin.replicaof('127.0.0.1', new URL(other.url).port);
    expect(await waitForAsync(async () => (await readyz()) === 503, 10_000, 100)).toBe(true);
    expect(await webhook()).toBe(503);
    // Steadily: not 200 between the reconnections that READONLY causes.
    const seen: number[] = [];
    for (let n = 0; n < 15; n++, await new Promise((resolve) => setTimeout(resolve, 100))) seen.push(await readyz());
    expect(seen.filter((status) => status !== 503)).toEqual([]);

    await admin.replicaof('NO', 'ONE');
    expect(await waitForAsync(async () => (await readyz()) === 200, 10_000, 100)).toBe(true);
    expect(await webhook()).toBe(200);
    // The write that made readiness 200 again was the probe's, in the log's slot.
    expect(await admin.exists(redisKeys(prefix).writeProbe)).toBe(1);
    expect(await waitFor(() => sub.received.length >= 2, 10_000)).toBe(true);
    await client.dispose();
  }, 40_000);
});
