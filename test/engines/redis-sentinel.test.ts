import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { jsonLines } from '../helpers/log-lines.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import {
  deliveryReport,
  keepSending,
  senderReport,
  liveSubscriber,
  receivedExactlyOnce,
  stopWatching,
  subscriptionState,
  watchReadiness,
  wentDownAndUp,
} from '../helpers/redis-failover.js';
import { waitForAsync } from '../helpers/redis-process.js';
import { redisServerOnPath } from '../helpers/redis-server.js';
import { startTestRedisSentinel, type TestRedisSentinel } from '../helpers/redis-sentinel.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * Two instances on a real Sentinel group (a master, 2 replicas, 3
 * Sentinels) named by REDIS_SENTINELS and REDIS_SENTINEL_MASTER. The master
 * is killed: a replica is promoted and the instances follow it (webhooks
 * 503 meanwhile, then 200; readiness 503, then 200); then the old master
 * comes back empty (no persistence) and is a master until the Sentinels make
 * it a replica: nothing is written to it, so every webhook answered 200 is
 * in the log the new master keeps, and reached every subscriber once.
 */

describe.skipIf(!redisServerOnPath())('on a Sentinel group (REDIS_SENTINELS)', () => {
  let group: TestRedisSentinel;
  const gateways: RunningGateway[] = [];

  beforeAll(async () => {
    group = await startTestRedisSentinel();
  }, 60_000);
  afterAll(async () => {
    await stopWatching();
    await Promise.all(gateways.map((gateway) => gateway.close()));
    await group?.close();
  }, 30_000);

  it('follows a failover, never writes to the old master come back empty, and says 503 only while it cannot write', async () => {
    const prefix = `sentinel-${randomUUID().slice(0, 8)}:`;
    const env = {
      REDIS_SENTINELS: group.sentinelSeeds,
      REDIS_SENTINEL_MASTER: group.name,
      REDIS_PREFIX: prefix,
      EVENT_LOG_SIZE: '1000000',
    };
    // What the gateways log (info and up), for the report of a failover they do not follow.
    const logLines: string[] = [];
    const logger = pino(
      { level: 'info' },
      jsonLines((line) => void logLines.push(JSON.stringify(line).slice(0, 300))),
    );
    const [a, b] = await Promise.all([startGateway(env, { logger }), startGateway(env, { logger })]);
    gateways.push(a, b);
    for (const gateway of [a, b]) expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    const subscribers = [await liveSubscriber(a), await liveSubscriber(b)];
    const readiness = [watchReadiness(a), watchReadiness(b)];
    const sender = keepSending([a, b], 'sentinel');
    if (!(await waitFor(() => sender.accepted.length >= 5, 10_000))) expect.fail(await senderReport(sender, [a, b]));

    const old = await group.master();
    await old.kill();
    const promoted = await group.waitForMasterOtherThan(old, 1);
    const byPromotion = sender.accepted.length;
    if (!(await waitFor(() => sender.accepted.length >= byPromotion + 10, 20_000)))
      expect.fail(`${await senderReport(sender, [a, b])} log: ${logLines.slice(-30).join('\n')}`);
    expect(await waitFor(() => readiness.every((watch) => wentDownAndUp(watch.seen)), 15_000)).toBe(true);

    // Back empty, a master until the Sentinels notice and make it the new master's replica (after its INFO reported
    // the wrong role for a while; the test group's clocks are short, redis-sentinel.ts), then the replica syncs in full.
    await old.start();
    const demoted = await waitForAsync(
      async () => {
        const client = new Redis(old.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        client.on('error', () => {});
        try {
          await client.connect();
          const info = await client.info('replication');
          return /role:slave/.test(info) && /master_link_status:up/.test(info) && info.includes(`master_port:${promoted.port}`);
        } finally {
          client.disconnect();
        }
      },
      30_000,
      100,
    );
    expect(demoted).toBe(true);
    const byDemotion = sender.accepted.length;
    if (!(await waitFor(() => sender.accepted.length >= byDemotion + 5, 20_000))) expect.fail(await senderReport(sender, [a, b]));
    await sender.stop();
    for (const watch of readiness) watch.stop();
    console.info('sentinel failover: webhooks answered 503 (and sent again):', sender.refused, 'of', sender.accepted.length);

    // Every webhook answered 200 is in the log of the master the group has now: none went to the old master alone.
    const master = new Redis((await group.master()).url);
    const logged = new Set(
      ((await master.xrange(redisKeys(prefix).stream, '-', '+')) as Array<[string, string[]]>).map(
        ([, fields]) => (JSON.parse(fields[1]!) as { eventId: string }).eventId,
      ),
    );
    master.disconnect();
    const missing = sender.accepted
      .map((id, index) => [id, index] as const)
      .filter(([id]) => !logged.has(id))
      .map(([, index]) => index);
    console.info({
      accepted: sender.accepted.length,
      logged: logged.size,
      byPromotion,
      byDemotion,
      missing: missing.length,
      firstMissing: missing.slice(0, 5),
      lastMissing: missing.slice(-5),
    });
    expect(missing).toEqual([]);
    if (!(await waitFor(() => receivedExactlyOnce(subscribers, sender.accepted), 15_000)))
      expect.fail(deliveryReport(subscribers, sender.accepted));
    for (const subscriber of subscribers) expect(await subscriptionState(subscriber)).toBe('open');
    for (const gateway of [a, b]) expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    await Promise.all(subscribers.map((subscriber) => subscriber.dispose()));
  }, 200_000);

  it('follows a failover asked of the Sentinels while the master stays up (it becomes a replica under open connections)', async () => {
    const prefix = `sentinel-${randomUUID().slice(0, 8)}:`;
    const env = { REDIS_SENTINELS: group.sentinelSeeds, REDIS_SENTINEL_MASTER: group.name, REDIS_PREFIX: prefix };
    const [a, b] = await Promise.all([startGateway(env), startGateway(env)]);
    gateways.push(a, b);
    const subscribers = [await liveSubscriber(a), await liveSubscriber(b)];
    const sender = keepSending([a, b], 'asked');
    if (!(await waitFor(() => sender.accepted.length >= 5, 10_000))) expect.fail(await senderReport(sender, [a, b]));

    const old = await group.master();
    const sentinel = new Redis(group.sentinels[0]!.url);
    await sentinel.call('SENTINEL', 'FAILOVER', group.name);
    sentinel.disconnect();
    await group.waitForMasterOtherThan(old, 2);
    const byPromotion = sender.accepted.length;
    // Writes go on, to the new master: the old one (a replica now) would answer READONLY.
    if (!(await waitFor(() => sender.accepted.length >= byPromotion + 10, 20_000))) expect.fail(await senderReport(sender, [a, b]));
    await sender.stop();
    expect(await waitFor(() => receivedExactlyOnce(subscribers, sender.accepted), 15_000)).toBe(true);
    for (const gateway of [a, b]) expect(await waitFor(() => gateway.gateway.ready(), 10_000)).toBe(true);
    await Promise.all(subscribers.map((subscriber) => subscriber.dispose()));
  }, 60_000);
});
