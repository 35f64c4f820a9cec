import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { OTHER_KEY, startGateway, type RunningGateway } from '../helpers/gateway.js';
import {
  keepSending,
  senderReport,
  liveSubscriber,
  deliveryReport,
  receivedExactlyOnce,
  stopWatching,
  subscriptionState,
  watchReadiness,
  wentDownAndUp,
} from '../helpers/redis-failover.js';
import { startTestRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { ask, infoField, waitForAsync } from '../helpers/redis-process.js';
import { deliverWebhook } from '../helpers/redis-deployment.js';
import { redisServerOnPath } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * Two instances on a real Redis Cluster (3 masters, a replica each) named by
 * REDIS_CLUSTER_NODES: every event reaches the subscribers of both once,
 * rate limits count across instances, and when the master of the event
 * log's slot is killed its replica takes over: webhooks get 503 meanwhile
 * (and are sent again), readiness says 503 then 200, subscribers stay on
 * their connections and miss nothing.
 */

describe.skipIf(!redisServerOnPath())('on a Redis Cluster (REDIS_CLUSTER_NODES)', () => {
  let cluster: TestRedisCluster;
  const gateways: RunningGateway[] = [];

  beforeAll(async () => {
    cluster = await startTestRedisCluster();
  }, 120_000);
  afterAll(async () => {
    await stopWatching();
    await Promise.all(gateways.map((gateway) => gateway.close()));
    await cluster?.close();
  }, 30_000);

  async function deployment(
    env: Record<string, string> = {},
    prefix = `cluster-${randomUUID().slice(0, 8)}:`,
  ): Promise<{ prefix: string; a: RunningGateway; b: RunningGateway }> {
    const started = await Promise.all([0, 1].map(() => startGateway({ REDIS_CLUSTER_NODES: cluster.seeds, REDIS_PREFIX: prefix, ...env })));
    gateways.push(...started);
    for (const gateway of started) expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    return { prefix, a: started[0]!, b: started[1]! };
  }

  it('delivers every webhook sent to either instance to the subscribers of both, once, and keeps the log in one slot', async () => {
    const { prefix, a, b } = await deployment();
    const subscribers = [await liveSubscriber(a), await liveSubscriber(b)];
    const accepted: string[] = [];
    for (let n = 0; n < 10; n++) {
      const id = `both-${n}-${randomUUID()}`;
      const request = buildWebhookRequest({
        form: 'enveloped',
        id,
        transaction: { transactionId: `tx-${n}`, status: 'completed', products: [] },
      });
      expect((await deliverWebhook(n % 2 === 0 ? a : b, request)).status).toBe(200);
      accepted.push(id);
    }
    // A redelivery to the other instance is admitted once.
    const again = buildWebhookRequest({
      form: 'enveloped',
      id: accepted[0]!,
      transaction: { transactionId: 'tx-0', status: 'completed', products: [] },
    });
    expect((await deliverWebhook(b, again)).status).toBe(200);
    expect(await waitFor(() => receivedExactlyOnce(subscribers, accepted), 10_000)).toBe(true);
    for (const subscriber of subscribers) expect(subscriber.ids()).toEqual(accepted);
    // The stream and the per-event keys live on the master of the `{events}` slot.
    const master = await cluster.masterOf(redisKeys(prefix).stream);
    const client = cluster.client();
    expect(Number(await client.xlen(redisKeys(prefix).stream))).toBe(10);
    expect(await client.exists(redisKeys(prefix).eventPosition(accepted[3]!, undefined))).toBe(1);
    expect(master.running()).toBe(true);
    await Promise.all(subscribers.map((subscriber) => subscriber.dispose()));
  });

  /** How many connections listen to the deployment's live channel on the node at `port` (PUBSUB NUMSUB counts that node's own). */
  const listenersOn = async (port: number, prefix: string) =>
    Number((await ask(port, (client) => client.pubsub('NUMSUB', redisKeys(prefix).channel)))[1]);

  it("listens to the live channel on the event log's master, which a failover takes down with every event it published", async () => {
    // A cluster passes a PUBLISH on to its other nodes after the append has gone to the replica: a master killed between
    // the two leaves an acknowledged event that a listener on another node never hears of, on a connection that stays up.
    // On the master itself, the connection ends with the master, and the log fills in what it missed.
    let prefix: string;
    do prefix = `cluster-${randomUUID().slice(0, 8)}:`;
    while ((await cluster.masterOf(redisKeys(prefix).stream)) === cluster.nodes[0]);
    await deployment({}, prefix);
    const master = await cluster.masterOf(redisKeys(prefix).stream);
    expect(await waitForAsync(async () => (await listenersOn(master.port, prefix)) === 2, 10_000, 100)).toBe(true);
  });

  it("moves its listener to the new master when an operator hands the event log's slot over (CLUSTER FAILOVER)", async () => {
    // The old master lives on as a replica, so the listener's connection stays up there: unless it moves, a later crash
    // of the new master could again take an acknowledged event's news with it.
    const { prefix, a, b } = await deployment();
    const subscribers = [await liveSubscriber(a), await liveSubscriber(b)];
    const master = await cluster.masterOf(redisKeys(prefix).stream);
    const replicaPort = await cluster.replicaPortOf(master);
    await ask(replicaPort, (client) => client.cluster('FAILOVER'));
    // A webhook sent at once meets the old master, now read-only, and then the new one: not the seconds until the cluster's
    // next periodic look at its slots (every 5 command bounds), which once cost every webhook seconds of 503.
    const handedOver = await Promise.all(
      [a, b].map((gateway, n) =>
        deliverWebhook(
          gateway,
          buildWebhookRequest({
            form: 'enveloped',
            id: `handover-first-${n}-${randomUUID()}`,
            transaction: { transactionId: `tx-handover-${n}`, status: 'completed', products: [] },
          }),
        ),
      ),
    );
    expect(handedOver.map(({ status }) => status)).toEqual([200, 200]);
    for (const { retryAfter } of handedOver) expect(retryAfter.length).toBeLessThan(10);
    expect(await waitForAsync(async () => (await cluster.masterOf(redisKeys(prefix).stream)).port === replicaPort, 20_000, 100)).toBe(true);
    await cluster.waitHealthy(45_000);
    expect(await waitForAsync(async () => (await listenersOn(replicaPort, prefix)) === 2, 15_000, 100)).toBe(true);
    const sender = keepSending([a, b], 'handover');
    if (!(await waitFor(() => sender.accepted.length >= 10, 20_000))) expect.fail(await senderReport(sender, [a, b]));
    await sender.stop();
    if (!(await waitFor(() => receivedExactlyOnce(subscribers, sender.accepted), 15_000)))
      expect.fail(`subscribers: ${deliveryReport(subscribers, sender.accepted)}`);
    await Promise.all(subscribers.map((subscriber) => subscriber.dispose()));
  }, 60_000);

  it("refuses to start on a cluster whose event log's master evicts keys, naming REDIS_CLUSTER_NODES", async () => {
    const prefix = `cluster-${randomUUID().slice(0, 8)}:`;
    const master = await cluster.masterOf(redisKeys(prefix).stream);
    await ask(master.port, (client) => client.config('SET', 'maxmemory', '1gb', 'maxmemory-policy', 'allkeys-lru'));
    try {
      await expect(startGateway({ REDIS_CLUSTER_NODES: cluster.seeds, REDIS_PREFIX: prefix })).rejects.toThrow(
        /^REDIS_CLUSTER_NODES must be a Redis that never evicts keys/,
      );
    } finally {
      await ask(master.port, (client) => client.config('SET', 'maxmemory', '0', 'maxmemory-policy', 'noeviction'));
    }
  });

  it("answers a webhook 200 only once the replica of the event log's master holds its event, 503 while it cannot", async () => {
    const { prefix, a } = await deployment();
    const master = await cluster.masterOf(redisKeys(prefix).stream);
    const replicaPort = await cluster.replicaPortOf(master);
    const replicaPid = Number(infoField(await ask(replicaPort, (client) => client.info('server')), 'process_id'));
    const request = buildWebhookRequest({
      form: 'enveloped',
      id: `wait-${randomUUID()}`,
      transaction: { transactionId: 'tx-wait', status: 'completed', products: [] },
    });
    // A frozen replica cannot acknowledge: the master's WAIT runs out and the sender is told to come back.
    process.kill(replicaPid, 'SIGSTOP');
    try {
      const refused = await fetch(`${a.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBeTruthy();
    } finally {
      process.kill(replicaPid, 'SIGCONT');
    }
    expect((await deliverWebhook(a, request)).status).toBe(200);
    await cluster.waitHealthy(45_000);
  });

  it("counts one identity's requests across instances", async () => {
    const { a, b } = await deployment({ RATE_LIMIT_PER_SECOND: '5' });
    // 4 requests on each instance are 8 for a limit of 5: some are refused only when the instances count together.
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, n) => fetch(`${(n % 2 === 0 ? a : b).url}/vendings`, { headers: { authorization: OTHER_KEY } })),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(1);
  });

  it(
    "follows a failover of the event log's master: 503 meanwhile, then 200, " +
      'readiness truthful, subscribers on their connections miss nothing',
    async () => {
      const { prefix, a, b } = await deployment();
      const subscribers = [await liveSubscriber(a), await liveSubscriber(b)];
      const readiness = [watchReadiness(a), watchReadiness(b)];
      const sender = keepSending([a, b], 'failover');
      if (!(await waitFor(() => sender.accepted.length >= 5, 10_000))) expect.fail(await senderReport(sender, [a, b]));

      const master = await cluster.masterOf(redisKeys(prefix).stream);
      await master.kill();
      // Its replica takes the slots over (cluster-node-timeout 2 s, then an election).
      await cluster.waitHealthy(45_000);
      const promoted = await cluster.masterOf(redisKeys(prefix).stream);
      expect(promoted.port).not.toBe(master.port);
      const sentBy = sender.accepted.length;
      if (!(await waitFor(() => sender.accepted.length >= sentBy + 10, 20_000))) expect.fail(await senderReport(sender, [a, b]));
      // An instance that could not write said 503 (one whose writes all landed after the promotion may have had no reason to), and both are
      // ready again.
      expect(
        await waitFor(
          () => readiness.some((watch) => wentDownAndUp(watch.seen)) && readiness.every((watch) => watch.last() === 200),
          15_000,
        ),
      ).toBe(true);
      await sender.stop();
      for (const watch of readiness) watch.stop();

      console.info(
        'cluster failover: webhooks answered 503 (and sent again):',
        sender.refused,
        'of',
        sender.accepted.length,
        '; readiness 503 seen:',
        readiness.map((watch) => watch.seen.filter((status) => status === 503).length),
      );
      expect(sender.refused).toBeGreaterThan(0);
      if (!(await waitFor(() => receivedExactlyOnce(subscribers, sender.accepted), 15_000)))
        expect.fail(`subscribers: ${deliveryReport(subscribers, sender.accepted)}`);
      // Both instances listen on the promoted master now.
      expect(await waitForAsync(async () => (await listenersOn(promoted.port, prefix)) === 2, 10_000, 100)).toBe(true);
      // Each on the connection it started with.
      for (const subscriber of subscribers) expect(await subscriptionState(subscriber)).toBe('open');
      await Promise.all(subscribers.map((subscriber) => subscriber.dispose()));
    },
    60_000,
  );
});
