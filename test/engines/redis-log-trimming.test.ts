import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import type { EventLog } from '../../src/events/event-log.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { createRedisClients } from '../../src/redis/redis-clients.js';
import { createRedisEventLog } from '../../src/redis/redis-event-log.js';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';

/*
 * Each event stored once, and bounded with the log: the history reads the
 * log's stream through its group, so trimming keeps every entry the group has
 * not acknowledged (and shrinks back once it has); an event's keys live as
 * long as the log reaches back, not a day outside it.
 */

const event = (n: number): TransactionUpdateEvent => ({
  eventId: `e${n}`,
  type: 'transaction.update',
  format: 'ENVELOPED',
  receivedAt: new Date(0).toISOString(),
  occurredAt: undefined,
  transactionId: `tx-${n}`,
  status: 'paid',
  products: [],
  transaction: { transactionId: `tx-${n}`, status: 'paid', products: [] },
  raw: {},
});

let redis: TestRedis;
let inspect: Redis;
beforeAll(async () => {
  redis = await startTestRedis();
  inspect = new Redis(redis.url);
});
afterAll(async () => {
  inspect.disconnect();
  await redis.close();
});

async function openLog(ctx: TestContext, capacity: number): Promise<{ log: EventLog; stream: string; prefix: string }> {
  const prefix = `trim-${randomUUID()}:`;
  const clients = createRedisClients(
    { kind: 'standalone', url: redis.url },
    { commandTimeoutMs: 1_000, probeKey: redisKeys(prefix).writeProbe },
  );
  const log = createRedisEventLog(clients, { prefix, capacity, pageEvents: 200, historyGroup: 'history', replicaWaitMs: 500 });
  ctx.onTestFinished(async () => {
    await log.close();
    await clients.close();
  });
  await log.whenLive();
  return { log, stream: redisKeys(prefix).stream, prefix };
}

const ids = async (stream: string) =>
  (await inspect.xrange(stream, '-', '+')).map(([, fields]) => (JSON.parse(fields[1]!) as TransactionUpdateEvent).eventId);

describe.concurrent('the Redis log with a history reading it', () => {
  it('never trims what the history has not acknowledged, and shrinks back to its capacity once it has', async (ctx) => {
    const { log, stream } = await openLog(ctx, 3);
    await inspect.xgroup('CREATE', stream, 'history', '0', 'MKSTREAM');
    for (let n = 1; n <= 8; n++) await log.append(event(n), 'id');
    // Nothing read by the history: every event stays, once (no other copy anywhere).
    expect(await ids(stream)).toEqual(['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7', 'e8']);
    expect((await inspect.keys('*history-queue*')).length).toBe(0);

    // Five read, three of them acknowledged: the two read and not acknowledged stay, with all after them.
    const read = (await inspect.xreadgroup('GROUP', 'history', 'one', 'COUNT', 5, 'STREAMS', stream, '>')) as Array<
      [string, Array<[string, string[]]>]
    >;
    const positions = read[0]![1].map(([id]) => id);
    await inspect.xack(stream, 'history', ...positions.slice(0, 3));
    await log.append(event(9), 'id');
    expect(await ids(stream)).toEqual(['e4', 'e5', 'e6', 'e7', 'e8', 'e9']);

    // All acknowledged: back to the capacity.
    await inspect.xack(stream, 'history', ...positions.slice(3));
    await log.append(event(10), 'id');
    expect(await ids(stream)).toEqual(['e6', 'e7', 'e8', 'e9', 'e10']);
    const read2 = (await inspect.xreadgroup('GROUP', 'history', 'one', 'STREAMS', stream, '>')) as Array<
      [string, Array<[string, string[]]>]
    >;
    await inspect.xack(stream, 'history', ...read2[0]![1].map(([id]) => id));
    await log.append(event(11), 'id');
    expect(await ids(stream)).toEqual(['e9', 'e10', 'e11']);
  });

  it("keeps an event's keys a day while the log is not full, and as long as the log reaches back once it is", async (ctx) => {
    const { log, prefix } = await openLog(ctx, 3);
    await log.append(event(1), 'id');
    const day = 86_400_000;
    expect(await inspect.pttl(redisKeys(prefix).dedupe('e1', undefined))).toBeGreaterThan(day - 60_000);
    for (let n = 2; n <= 5; n++) await log.append(event(n), 'id');
    // The log turns over in milliseconds here: the keys live the shortest life, a minute, not a day.
    for (const key of [
      redisKeys(prefix).dedupe('e5', undefined),
      redisKeys(prefix).eventPosition('e5', undefined),
      redisKeys(prefix).lastDigest('tx-5', undefined),
    ]) {
      const life = await inspect.pttl(key);
      expect(life).toBeGreaterThan(0);
      expect(life).toBeLessThanOrEqual(60_000);
    }
  });
});
