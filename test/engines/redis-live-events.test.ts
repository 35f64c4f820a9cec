import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest, type WebhookRequest } from '../../src/events/webhook-request.js';
import { TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { deliverWebhook, redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient, type QueuedSubscription } from '../helpers/ws-client.js';

/*
 * The live path across instances sharing a Redis: live delivery
 * does not depend on the replay log's size, statuses that come back are
 * published whichever instance gets them, and a redelivery is published once
 * even when Redis restarts in between.
 */
let deployments: RedisDeployments;

beforeAll(async () => {
  deployments = await redisDeployments();
});
afterAll(() => deployments.close());

const deployment = (count: number, env: Record<string, string> = {}) => deployments.start(count, env);
const deliver = async (gateway: RunningGateway, request: WebhookRequest) => (await deliverWebhook(gateway, request)).status;

async function subscribers(gateway: RunningGateway, count: number): Promise<{ subs: QueuedSubscription[]; dispose(): Promise<void> }> {
  const client = wsClient(gateway.url, TEST_KEY);
  const before = gateway.gateway.activeSubscriptions();
  // A document of its own each (by operation name), so that none shares another's execution.
  const subs = Array.from({ length: count }, (_, n) =>
    subscribe(client, `subscription S${n} { transactionUpdated { eventId transactionId status } }`),
  );
  expect(await waitFor(() => gateway.gateway.activeSubscriptions() === before + count)).toBe(true);
  return { subs, dispose: async () => void (await client.dispose()) };
}

const legacy = (transactionId: string, status: string) =>
  buildWebhookRequest({ form: 'legacy', transaction: { transactionId, status, products: [] } });

describe('with REDIS_URL', () => {
  it('delivers a burst larger than the event log to every subscriber of both instances, each event once', async () => {
    const [a, b] = await deployment(2, { EVENT_LOG_SIZE: '3' });
    const onA = await subscribers(a!, 2);
    const onB = await subscribers(b!, 2);
    const ids = Array.from({ length: 400 }, (_, n) => `burst-${n}-${randomUUID()}`);
    const senders = Array.from({ length: 20 }, async (_, lane) => {
      for (let n = lane; n < ids.length; n += 20) {
        const request = buildWebhookRequest({
          form: 'enveloped',
          transaction: { transactionId: `tx-${n % 7}`, status: `s-${n}`, products: [] },
          id: ids[n],
        });
        expect(await deliver(n % 2 === 0 ? a! : b!, request)).toBe(200);
      }
    });
    await Promise.all(senders);
    const all = [...onA.subs, ...onB.subs];
    expect(await waitFor(() => all.every((sub) => sub.received.length >= ids.length), 10_000)).toBe(true);
    // Let any duplicate arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const orders = all.map((sub) => sub.received.map((result) => result.data!.transactionUpdated.eventId as string));
    for (const order of orders) {
      expect(order).toHaveLength(ids.length);
      expect(new Set(order)).toEqual(new Set(ids));
      // Every subscriber sees the log's one order.
      expect(order).toEqual(orders[0]);
    }
    await Promise.all([onA.dispose(), onB.dispose()]);
  });

  it('publishes a legacy status that comes back, whichever instance receives it, and drops redeliveries on either', async () => {
    const [a, b] = await deployment(2);
    const onB = await subscribers(b!, 1);
    const tx = `tx-${randomUUID()}`;
    expect(await deliver(a!, legacy(tx, 'pending'))).toBe(200);
    expect(await deliver(b!, legacy(tx, 'pending'))).toBe(200);
    expect(await deliver(b!, legacy(tx, 'completed'))).toBe(200);
    expect(await deliver(a!, legacy(tx, 'completed'))).toBe(200);
    expect(await deliver(a!, legacy(tx, 'pending'))).toBe(200);
    expect(await deliver(b!, legacy(tx, 'done'))).toBe(200);
    const sub = onB.subs[0]!;
    const statuses = [];
    for (let n = 0; n < 4; n++) statuses.push((await sub.next()).data!.transactionUpdated.status);
    expect(statuses).toEqual(['pending', 'completed', 'pending', 'done']);
    await onB.dispose();
  });

  it('publishes a redelivery once when Redis restarted (and lost its keys) in between', async () => {
    if (!deployments.redis.restartable) {
      console.warn('skipped: no redis-server binary on PATH, so the test cannot restart Redis');
      return;
    }
    const [a, b] = await deployment(2);
    const onB = await subscribers(b!, 1);
    const request = buildWebhookRequest({
      form: 'enveloped',
      transaction: { transactionId: 'tx-r', status: 'paid', products: [] },
      id: `msg-${randomUUID()}`,
    });
    expect(await deliver(a!, request)).toBe(200);
    const sub = onB.subs[0]!;
    expect((await sub.next()).data!.transactionUpdated.status).toBe('paid');

    await deployments.redis.stop();
    expect(await waitFor(() => !a!.gateway.ready(), 5_000)).toBe(true);
    await deployments.redis.start();
    // The sender goes on retrying, to either instance.
    expect(await deliver(a!, request)).toBe(200);
    expect(await deliver(b!, request)).toBe(200);
    const sentinel = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: 'tx-r', status: 'sentinel', products: [] } });
    expect(await deliver(a!, sentinel)).toBe(200);
    expect((await sub.next(5_000)).data!.transactionUpdated.status).toBe('sentinel');
    expect(sub.received).toHaveLength(2);
    await onB.dispose();
  });
});
