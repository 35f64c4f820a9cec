import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { deliverWebhook, redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import type { TestRedis } from '../helpers/redis-server.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient, type QueuedSubscription } from '../helpers/ws-client.js';

/*
 * Several gateway instances sharing one Redis: every instance delivers every
 * event once, and subscribers resume where they left off.
 */
let deployments: RedisDeployments;
let redis: TestRedis;

beforeAll(async () => {
  deployments = await redisDeployments();
  redis = deployments.redis;
});
afterAll(() => deployments.close());

/** Two (or more) instances of one deployment: same Redis, same key prefix. */
const deployment = (count: number, env: Record<string, string> = {}) => deployments.start(count, env);

const tx = (n: number) => ({ transactionId: `tx-${n}`, status: `status-${n}`, products: [] });

/** POSTs a webhook; retries on 503 (the contract's sender would) until accepted. */
async function deliver(gateway: RunningGateway, body: string, headers: Record<string, string>): Promise<number> {
  const { status, retryAfter } = await deliverWebhook(gateway, { body, headers });
  for (const value of retryAfter) expect(value).toBe('5');
  return status;
}

async function send(gateway: RunningGateway, n: number, id = `msg-${randomUUID()}`): Promise<string> {
  const request = buildWebhookRequest({ form: 'enveloped', transaction: tx(n), id });
  expect(await deliver(gateway, request.body, request.headers)).toBe(200);
  return id;
}

const QUERY = 'subscription($after: ID) { transactionUpdated(after: $after) { eventId status } }';

async function liveSubscriber(gateway: RunningGateway, after?: string): Promise<{ sub: QueuedSubscription; dispose(): Promise<void> }> {
  const client = wsClient(gateway.url, TEST_KEY);
  const before = gateway.gateway.activeSubscriptions();
  const sub = subscribe(client, QUERY, after ? { after } : {});
  expect(await waitFor(() => gateway.gateway.activeSubscriptions() > before)).toBe(true);
  return { sub, dispose: async () => void (await client.dispose()) };
}

describe('with REDIS_URL', () => {
  it('delivers a webhook received by A to a subscriber on B', async () => {
    const [a, b] = await deployment(2);
    const onB = await liveSubscriber(b!);
    const id = await send(a!, 1);
    const result = await onB.sub.next();
    expect(result.data).toEqual({ transactionUpdated: { eventId: id, status: 'status-1' } });
    expect(result.extensions).toEqual({ eventId: id });
    await onB.dispose();
  });

  it('publishes once an event redelivered to another instance', async () => {
    const [a, b] = await deployment(2);
    const onA = await liveSubscriber(a!);
    const onB = await liveSubscriber(b!);
    const id = await send(a!, 2);
    await send(b!, 2, id);
    await send(a!, 3);
    for (const { sub } of [onA, onB]) {
      expect((await sub.next()).data!.transactionUpdated.eventId).toBe(id);
      expect((await sub.next()).data!.transactionUpdated.status).toBe('status-3');
      expect(sub.received).toHaveLength(2);
    }
    await Promise.all([onA.dispose(), onB.dispose()]);
  });

  it('replays exactly the 20 events missed, in order, then goes on live', async () => {
    const [a, b] = await deployment(2);
    const first = await liveSubscriber(a!);
    const seen = await send(b!, 100);
    expect((await first.sub.next()).data!.transactionUpdated.eventId).toBe(seen);
    await first.dispose();

    const missed: string[] = [];
    for (let n = 1; n <= 20; n++) missed.push(await send(n % 2 === 0 ? a! : b!, n));

    const resumed = await liveSubscriber(b!, seen);
    const replayed = [];
    for (let n = 0; n < 20; n++) replayed.push((await resumed.sub.next()).data!.transactionUpdated.eventId);
    expect(replayed).toEqual(missed);
    const live = await send(a!, 21);
    expect((await resumed.sub.next()).data!.transactionUpdated.eventId).toBe(live);
    expect(resumed.sub.received).toHaveLength(21);
    await resumed.dispose();
  });

  it('answers EVENTS_EXPIRED for an event older than the log reaches', async () => {
    const [a] = await deployment(1, { EVENT_LOG_SIZE: '5' });
    const oldest = await send(a!, 1);
    for (let n = 2; n <= 8; n++) await send(a!, n);
    const client = wsClient(a!.url, TEST_KEY);
    for (const after of [oldest, 'never-published']) {
      // graphql-ws answers a subscription that cannot start with one result holding the error, then completes.
      const sub = subscribe(client, QUERY, { after });
      const result = await sub.next();
      expect(result.data ?? null).toBeNull();
      expect(result.errors?.map((error) => error.extensions?.code)).toEqual(['EVENTS_EXPIRED']);
      expect(await sub.ended).toBe('complete');
    }
    await client.dispose();
  });

  it('resumes an SSE stream from Last-Event-ID and names each event in `id:` by its position in the shared log', async () => {
    const [a, b] = await deployment(2);
    const sse = await sseSubscribe(a!.url, 'subscription { transactionUpdated { status } }', TEST_KEY);
    expect(await waitFor(() => a!.gateway.activeSubscriptions() === 1)).toBe(true);
    const firstId = await send(b!, 1);
    const first = await sse.next();
    expect(first.extensions).toEqual({ eventId: firstId });
    const firstPosition = sse.lastEventId();
    expect(firstPosition).toMatch(/^\d+-\d+$/);
    sse.close();
    await send(b!, 2);
    await send(a!, 3);
    const again = await sseSubscribe(b!.url, 'subscription { transactionUpdated { status } }', TEST_KEY, undefined, {
      'last-event-id': firstPosition!,
    });
    expect((await again.next()).data.transactionUpdated.status).toBe('status-2');
    expect((await again.next()).data.transactionUpdated.status).toBe('status-3');
    // Positions only grow, on whichever instance the event arrived.
    const [fm, fs] = firstPosition!.split('-').map(Number);
    const [lm, ls] = again.lastEventId()!.split('-').map(Number);
    expect(lm! > fm! || (lm === fm && ls! > fs!)).toBe(true);
    again.close();
  });

  it('loses no accepted event when Redis restarts, reports not ready meanwhile, and reconnects by itself', async () => {
    if (!redis.restartable) {
      console.warn('skipped: no redis-server binary on PATH, so the test cannot restart Redis');
      return;
    }
    const [a, b] = await deployment(2);
    const onB = await liveSubscriber(b!);
    const sent: string[] = [];
    for (let n = 1; n <= 5; n++) sent.push(await send(a!, n));

    await redis.stop();
    expect(await waitFor(() => !a!.gateway.ready(), 5_000)).toBe(true);
    expect((await fetch(`${a!.url}/readyz`)).status).toBe(503);
    // While Redis is away a webhook is refused with 503, so its sender retries it.
    const during = buildWebhookRequest({ form: 'legacy', transaction: tx(6) });
    const refused = await fetch(`${a!.url}/webhooks`, { method: 'POST', headers: during.headers, body: during.body });
    expect(refused.status).toBe(503);

    const restarted = redis.start();
    expect(await deliver(a!, during.body, during.headers)).toBe(200);
    await restarted;
    for (let n = 7; n <= 10; n++) sent.push(await send(n % 2 === 0 ? a! : b!, n));
    expect(await waitFor(() => a!.gateway.ready(), 5_000)).toBe(true);
    expect((await fetch(`${a!.url}/readyz`)).status).toBe(200);

    const statuses = [];
    for (let n = 0; n < 10; n++) statuses.push((await onB.sub.next(5_000)).data!.transactionUpdated.status);
    expect(statuses).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => `status-${n}`));
    await onB.dispose();
  });
});
