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

  /** An earlier version's log under `prefix`: three events with their positions, and the history queue holding the third. */
  async function earlierLog(prefix: string): Promise<string[]> {
    const event = (n: number) => ({
      eventId: `old-${n}`,
      type: 'transaction.update',
      format: 'ENVELOPED',
      receivedAt: new Date().toISOString(),
      transactionId: `tx-${n}`,
      status: `s-${n}`,
      products: [],
      transaction: { transactionId: `tx-${n}`, status: `s-${n}`, products: [] },
    });
    const positions: string[] = [];
    for (const n of [1, 2, 3]) {
      const position = (await admin.xadd(`${prefix}events`, '*', 'event', JSON.stringify(event(n))))!;
      positions.push(position);
      await admin.set(`${prefix}event-position:old-${n}`, position, 'EX', 3_600);
    }
    await admin.xadd(`${prefix}history-queue`, '*', 'event', JSON.stringify(event(3)));
    return positions;
  }

  async function expectMoved(prefix: string, positions: string[]): Promise<void> {
    const keys = redisKeys(prefix);
    expect(await admin.exists(`${prefix}events`, `${prefix}history-queue`)).toBe(0);
    expect(await admin.xlen(keys.stream)).toBe(3);
    expect(await admin.xlen(keys.historyQueue)).toBe(1);
    expect(await admin.get(keys.eventPosition('old-1', undefined))).toBe(positions[0]);
  }

  it('renames the stream, the event positions and the history queue at start, and resumes after an old event', async () => {
    const prefix = `upgrade-${randomUUID().slice(0, 8)}:`;
    const positions = await earlierLog(prefix);

    const gateway = await startGateway({ REDIS_URL: redis.url, REDIS_PREFIX: prefix });
    gateways.push(gateway);
    await expectMoved(prefix, positions);

    const client = wsClient(gateway.url, TEST_KEY);
    const sub = subscribe(client, 'subscription($after: ID) { transactionUpdated(after: $after) { eventId } }', { after: 'old-1' });
    expect(await waitFor(() => sub.received.length >= 2, 5_000)).toBe(true);
    expect(sub.received.map((result) => result.data?.transactionUpdated?.eventId)).toEqual(['old-2', 'old-3']);
    await client.dispose();
  });

  // A start on a busy machine, or beside a Redis that is itself starting, sees commands time out: the move is tried
  // again until it is done, and the gateway listens only then (it used to give up after 5 s, leaving the old log behind).
  it('moves the old keys when Redis answers nothing for the first seconds of the start', async () => {
    const prefix = `upgrade-${randomUUID().slice(0, 8)}:`;
    const positions = await earlierLog(prefix);
    await admin.call('CLIENT', 'PAUSE', '7000', 'ALL');
    const gateway = await startGateway({ REDIS_URL: redis.url, REDIS_PREFIX: prefix });
    gateways.push(gateway);
    await expectMoved(prefix, positions);
  }, 45_000);
});
