import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import {
  apolloClient,
  eventSourceClient,
  graphqlSseClient,
  graphqlWsClient,
  urqlClient,
  type RecordingClient,
} from '../helpers/real-clients.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * A restart does not end subscriptions. The gateways sit
 * behind a TCP proxy that holds new connections while no instance is there,
 * as a load balancer does (graphql-ws's defaults give up on a refused
 * connection). The clients are the real libraries with their default retry
 * settings; the test never resubscribes for them.
 */

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Posts a `transaction.update` whose status names it; answers the HTTP status (0 when refused). */
async function postUpdate(url: string, status: string): Promise<number> {
  const request = buildWebhookRequest({
    form: 'enveloped',
    transaction: { transactionId: 'restart-tx', status, products: [] },
    id: `evt-${randomUUID()}`,
  });
  try {
    const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

const statuses = (client: RecordingClient) => client.received.map((update) => update.status);

async function gatewayFor(env: Record<string, string> = {}): Promise<RunningGateway> {
  const running = await startGateway(env, {}, (config) => ({ ...config, shutdownTimeoutMs: 5_000 }));
  cleanups.push(() => running.close());
  return running;
}

describe('a restart with real clients, default settings', () => {
  it('Apollo Client, urql, graphql-ws, graphql-sse and eventsource all resubscribe by themselves', async () => {
    const first = await gatewayFor();
    const proxy = await startTcpProxy(first.url);
    cleanups.push(() => proxy.close());
    const clients = [apolloClient, urqlClient, graphqlWsClient, graphqlSseClient, eventSourceClient].map((make) =>
      make(proxy.url, TEST_KEY),
    );
    cleanups.push(() => clients.forEach((client) => client.close()));
    expect(await waitFor(() => first.gateway.activeSubscriptions() === clients.length, 10_000)).toBe(true);

    // SIGTERM's shutdown, while the balancer holds new connections; then the new process takes them.
    proxy.target(undefined);
    await first.close();
    const second = await gatewayFor();
    proxy.target(second.url);

    await waitFor(() => second.gateway.activeSubscriptions() === clients.length, 15_000, 50);
    expect(clients.map((client) => [client.name, client.ended])).toEqual(clients.map((client) => [client.name, undefined]));
    expect(second.gateway.activeSubscriptions()).toBe(clients.length);
    expect(await postUpdate(second.url, 'after-restart')).toBe(200);
    await waitFor(() => clients.every((client) => client.received.length > 0), 5_000);
    expect(clients.map((client) => [client.name, statuses(client)])).toEqual(clients.map((client) => [client.name, ['after-restart']]));
  }, 30_000);
});

describe('a rolling restart over Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });

  it('loses no event for subscribers that resume with their last event id: each gets every one once, in order', async () => {
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: `restart-${randomUUID()}:` };
    let a = await gatewayFor(env);
    const b = await gatewayFor(env);
    const proxy = await startTcpProxy(a.url);
    cleanups.push(() => proxy.close());
    const clients = [graphqlWsClient(proxy.url, TEST_KEY, { resume: true }), eventSourceClient(proxy.url, TEST_KEY)];
    cleanups.push(() => clients.forEach((client) => client.close()));
    expect(await waitFor(() => a.gateway.activeSubscriptions() === clients.length, 10_000)).toBe(true);

    // A sender posting all along, one webhook at a time, to whichever instance it is told; a refusal is retried.
    const accepted: string[] = [];
    let sendTo = a.url;
    let sending = true;
    const sender = (async () => {
      for (let n = 0; sending; n++) {
        const status = `s-${n}`;
        while ((await postUpdate(sendTo, status)) !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
        accepted.push(status);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const everyoneHas = (count: number) => () => clients.every((client) => client.received.length >= count);
    expect(await waitFor(everyoneHas(5), 5_000)).toBe(true);

    // A leaves the balancer and stops (SIGTERM's shutdown): its subscribers come back through the balancer
    // to B, which took the webhooks meanwhile; then A is back, takes the webhooks, and B passes them on.
    proxy.target(b.url);
    sendTo = b.url;
    await a.close();
    expect(await waitFor(() => b.gateway.activeSubscriptions() === clients.length, 15_000, 50)).toBe(true);
    a = await gatewayFor(env);
    proxy.target(a.url);
    sendTo = a.url;
    const resumedAt = accepted.length;
    expect(await waitFor(everyoneHas(resumedAt + 5), 5_000)).toBe(true);
    sending = false;
    await sender;
    await waitFor(everyoneHas(accepted.length), 5_000);

    expect(clients.map((client) => [client.name, client.ended])).toEqual(clients.map((client) => [client.name, undefined]));
    for (const client of clients) expect(statuses(client), client.name).toEqual(accepted);
  }, 40_000);
});
