import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * A deployment upgraded on one Redis server: the event log an earlier version
 * kept under untagged keys (`<prefix>events`, `<prefix>event-position:<id>`,
 * `<prefix>history-queue`) is taken over at start, so a subscriber resumes
 * after an event of before the upgrade, and nothing of it is replayed as new.
 */

describe('upgrading a deployment whose event log has untagged keys', () => {
  let redis: TestRedis;
  let admin: Redis;
  const gateways: RunningGateway[] = [];
  beforeAll(async () => {
    redis = await startTestRedis();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.close()));
    admin?.disconnect();
    await redis?.close();
  });

  it('renames the stream, the event positions and the history queue at start, and resumes after an old event', async () => {
    const prefix = `upgrade-${randomUUID().slice(0, 8)}:`;
    const event = (n: number) => ({ eventId: `old-${n}`, type: 'transaction.update', format: 'ENVELOPED', receivedAt: new Date().toISOString(), transactionId: `tx-${n}`, status: `s-${n}`, products: [], transaction: { transactionId: `tx-${n}`, status: `s-${n}`, products: [] } });
    const positions: string[] = [];
    for (const n of [1, 2, 3]) {
      const position = (await admin.xadd(`${prefix}events`, '*', 'event', JSON.stringify(event(n))))!;
      positions.push(position);
      await admin.set(`${prefix}event-position:old-${n}`, position, 'EX', 3_600);
    }
    await admin.xadd(`${prefix}history-queue`, '*', 'event', JSON.stringify(event(3)));

    const gateway = await startGateway({ REDIS_URL: redis.url, REDIS_PREFIX: prefix });
    gateways.push(gateway);
    const keys = redisKeys(prefix);
    expect(await admin.exists(`${prefix}events`, `${prefix}history-queue`)).toBe(0);
    expect(await admin.xlen(keys.stream)).toBe(3);
    expect(await admin.xlen(keys.historyQueue)).toBe(1);
    expect(await admin.get(keys.eventPosition('old-1', undefined))).toBe(positions[0]);

    const client = wsClient(gateway.url, TEST_KEY);
    const sub = subscribe(client, 'subscription($after: ID) { transactionUpdated(after: $after) { eventId } }', { after: 'old-1' });
    expect(await waitFor(() => sub.received.length >= 2, 5_000)).toBe(true);
    expect(sub.received.map((result) => result.data?.transactionUpdated?.eventId)).toEqual(['old-2', 'old-3']);
    await client.dispose();
  });
});
