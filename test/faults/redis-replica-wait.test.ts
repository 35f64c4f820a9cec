import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient, type QueuedSubscription } from '../helpers/ws-client.js';
import { redisKeys } from '../../src/redis/redis-keys.js';

/*
 * A webhook is answered 200 only once a replica holds its event: a master and
 * a replica of the test's own (`--replicaof`), the replica frozen (SIGSTOP)
 * so that it confirms nothing. Its 503 is retried by the sender; the retry is
 * found a redelivery where the master kept the event, and appended again where
 * a failover lost it (the master killed, the replica promoted by the test);
 * either way subscribers get each event answered 200 once.
 */

const GIVE_UP_MS = 20_000;

const opened: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

async function pair(): Promise<{ master: TestRedis; replica: TestRedis; onMaster: Redis; onReplica: Redis }> {
  const master = await startTestRedis();
  opened.push(master);
  // The replica loads what the master sends from the socket, writing no dump.rdb into the working directory.
  const replica = await startTestRedis(['--replicaof', '127.0.0.1', new URL(master.url).port, '--repl-diskless-load', 'on-empty-db']);
  opened.push(replica);
  const onMaster = new Redis(master.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  const onReplica = new Redis(replica.url);
  onMaster.on('error', () => {});
  opened.push({ close: () => onMaster.disconnect() }, { close: () => onReplica.disconnect() });
  let linked = false;
  for (
    const deadline = Date.now() + GIVE_UP_MS;
    !linked && Date.now() < deadline;
    await new Promise((resolve) => setTimeout(resolve, 50))
  ) {
    linked =
      /master_link_status:up/.test(await onReplica.info('replication')) && /connected_slaves:1/.test(await onMaster.info('replication'));
  }
  expect(linked).toBe(true);
  return { master, replica, onMaster, onReplica };
}

async function gatewayOn(redisUrl: string): Promise<{ gateway: RunningGateway; prefix: string }> {
  const prefix = `wait-${randomUUID().slice(0, 8)}:`;
  const gateway = await startGateway({ REDIS_URL: redisUrl, REDIS_PREFIX: prefix });
  opened.push(gateway);
  return { gateway, prefix };
}

const QUERY = 'subscription { transactionUpdated { eventId status } }';

async function subscriber(gateway: RunningGateway): Promise<QueuedSubscription> {
  const client = wsClient(gateway.url, TEST_KEY);
  opened.push({ close: () => client.dispose() });
  const sub = subscribe(client, QUERY);
  expect(await waitFor(() => gateway.gateway.activeSubscriptions() === 1, GIVE_UP_MS)).toBe(true);
  return sub;
}

const webhook = (id: string, status = 'paid') =>
  buildWebhookRequest({ form: 'enveloped', id, transaction: { transactionId: `tx-${id}`, status, products: [] } });

async function post(gateway: RunningGateway, id: string): Promise<Response> {
  const request = webhook(id);
  return fetch(`${gateway.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
}

/** Posts until answered otherwise than 503 (the sender's retries), giving up after GIVE_UP_MS. */
async function postUntilAccepted(gateway: RunningGateway, id: string): Promise<number> {
  for (const deadline = Date.now() + GIVE_UP_MS; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    const response = await post(gateway, id);
    if (response.status !== 503) return response.status;
  }
  throw new Error(`webhook ${id} never accepted`);
}

const idsIn = async (redis: Redis, stream: string) =>
  (await redis.xrange(stream, '-', '+')).map(([, fields]) => (JSON.parse(fields[1]!) as { eventId: string }).eventId);

/** The event ids a subscriber received once `last` came. */
async function receivedUntil(sub: QueuedSubscription, last: string): Promise<string[]> {
  const ids = () => sub.received.map((result) => result.data?.transactionUpdated.eventId as string);
  expect(await waitFor(() => ids().includes(last), GIVE_UP_MS)).toBe(true);
  return ids();
}

describe.skipIf(!redisServerOnPath())('with a replica, a webhook answered 200 only once the replica holds its event', () => {
  it('answers 503 with Retry-After while the replica cannot confirm, and 200 to the retry once it can, delivered once', async () => {
    const { master, replica, onReplica } = await pair();
    const { gateway, prefix } = await gatewayOn(master.url);
    const sub = await subscriber(gateway);
    // A 503 is allowed whenever the replica is slow (a busy machine): the sender retries; a 200 means the replica holds it.
    expect(await postUntilAccepted(gateway, 'first')).toBe(200);
    // Answered 200: the replica holds it already.
    expect(await idsIn(onReplica, redisKeys(prefix).stream)).toEqual(['first']);

    replica.pause();
    const started = Date.now();
    const refused = await post(gateway, 'second');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    // Within the bound (and the command timeout behind it), not after the sender's own timeout.
    expect(Date.now() - started).toBeLessThan(GIVE_UP_MS);
    replica.resume();

    expect(await postUntilAccepted(gateway, 'second')).toBe(200);
    expect(await idsIn(onReplica, redisKeys(prefix).stream)).toEqual(['first', 'second']);
    expect(await postUntilAccepted(gateway, 'third')).toBe(200);
    expect(await receivedUntil(sub, 'third')).toEqual(['first', 'second', 'third']);
  }, 60_000);

  it('appends the retry again on the promoted replica when the master died before the replica had the event, delivered once', async () => {
    const { master, replica, onReplica } = await pair();
    const proxy: TcpProxy = await startTcpProxy(master.url.replace(/^redis:/, 'http:'));
    opened.push(proxy);
    const { gateway, prefix } = await gatewayOn(proxy.url.replace(/^http:/, 'redis:'));
    const sub = await subscriber(gateway);
    expect(await postUntilAccepted(gateway, 'before')).toBe(200);

    replica.pause();
    expect((await post(gateway, 'lost')).status).toBe(503);
    // The master appended and published it; subscribers have it already.
    expect(await receivedUntil(sub, 'lost')).toEqual(['before', 'lost']);
    proxy.target(undefined);
    await master.stop();
    replica.resume();
    expect(await onReplica.replicaof('NO', 'ONE')).toBe('OK');
    proxy.target(replica.url.replace(/^redis:/, 'http:'));

    // The instance remembers 'lost' as published, not as confirmed: the retry reaches Redis, which no longer has it.
    expect(await postUntilAccepted(gateway, 'lost')).toBe(200);
    expect(await idsIn(onReplica, redisKeys(prefix).stream)).toEqual(['before', 'lost']);
    expect(await postUntilAccepted(gateway, 'after')).toBe(200);
    expect(await receivedUntil(sub, 'after')).toEqual(['before', 'lost', 'after']);
  }, 60_000);
});

describe.skipIf(!redisServerOnPath())('a Redis that evicts keys when full', () => {
  it('is refused at start with one line naming REDIS_URL and the policy', async () => {
    const redis = await startTestRedis(['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru']);
    opened.push(redis);
    await expect(startGateway({ REDIS_URL: redis.url })).rejects.toThrow(
      /^REDIS_URL must be a Redis that never evicts keys .*maxmemory 104857600, maxmemory-policy allkeys-lru/,
    );
  });

  it('is accepted with noeviction, and when CONFIG is refused (as managed services do) the start goes on', async () => {
    for (const args of [
      ['--maxmemory', '100mb', '--maxmemory-policy', 'noeviction'],
      ['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', ''],
    ]) {
      const redis = await startTestRedis(args);
      opened.push(redis);
      const gateway = await startGateway({ REDIS_URL: redis.url });
      opened.push(gateway);
      expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    }
  });
});
