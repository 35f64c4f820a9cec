import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import type { Config } from '../../src/config/config.js';
import { startForwardGateway, tuneUpstream, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * Forward mode (BACKEND=rest, no UPSTREAM_API_KEY): the upstream is the only
 * judge of a client's key, so a key it does not accept must not reach the
 * live feed, which otherwise makes no upstream call at all.
 */
const GOOD = 'good-key';
const SUBSCRIPTION = 'subscription { transactionUpdated { transactionId status products { productName } } }';

let upstream: StandInUpstream;
let gateway: RunningGateway;
const extra: RunningGateway[] = [];

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [GOOD] });
  gateway = await startForwardGateway(upstream.url);
});
afterAll(async () => {
  await Promise.all([gateway, ...extra].map((running) => running.close()));
  await upstream.close();
});

async function startForward(env: Record<string, string>, tune?: (config: Config) => Config): Promise<RunningGateway> {
  const running = await startForwardGateway(upstream.url, { API_KEYS: '', ...env }, {}, tune);
  extra.push(running);
  return running;
}

const transactionId = () => (upstream.transactions[0] as { transactionId: string }).transactionId;
/** The upstream calls made with `key` to the path the gateway checks keys with. */
const checksOf = (key: string) => upstream.callsTo('GET', '/vendings').filter((call) => call.authorization === key).length;

async function postWebhook(url: string, status: string): Promise<void> {
  const request = buildWebhookRequest({ form: 'legacy', transaction: { transactionId: transactionId(), status, products: [] } });
  const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

/** The close code a graphql-ws client gets for `key`, and the results it received before. */
async function closeCodeFor(url: string, key: string): Promise<{ code: number | undefined; received: number }> {
  const client = wsClient(url, key);
  const sub = subscribe(client, SUBSCRIPTION);
  const ended = (await Promise.race([sub.ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 3_000))])) as {
    code?: number;
  };
  await client.dispose();
  return { code: ended?.code, received: sub.received.length };
}

/** An SSE subscription whose whole body is read until the server ends the stream. */
async function openSse(url: string, key: string): Promise<{ status: number; body: Promise<string>; close(): void }> {
  const abort = new AbortController();
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: key },
    body: JSON.stringify({ query: SUBSCRIPTION }),
    signal: abort.signal,
  });
  return { status: response.status, body: response.text(), close: () => abort.abort() };
}

const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms))]);

describe('a key the upstream does not accept', () => {
  it('is refused over graphql-ws with 4403, and its socket gets no event', async () => {
    const before = gateway.gateway.activeSubscriptions();
    const refused = closeCodeFor(gateway.url, 'made-up-ws');
    await waitFor(() => checksOf('made-up-ws') > 0);
    await postWebhook(gateway.url, 'pending');
    expect(await refused).toEqual({ code: 4403, received: 0 });
    expect(gateway.gateway.activeSubscriptions()).toBe(before);
  });

  it('is refused over SSE with 401', async () => {
    const sse = await sseSubscribe(gateway.url, SUBSCRIPTION, 'made-up-sse');
    expect(sse.status).toBe(401);
    sse.close();
  });

  it('gets 401 UNAUTHENTICATED on GraphQL over HTTP and on REST, even for a field that needs no upstream call', async () => {
    for (const query of ['{ __typename }', `{ transaction(id: "${transactionId()}") { status } }`]) {
      const graphql = await postGraphQL(gateway.url, query, { key: 'made-up-http' });
      expect(graphql.status).toBe(401);
      expect(graphql.body.data).toBeUndefined();
      expect(graphql.body.errors?.map((error) => error.extensions?.code)).toEqual(['UNAUTHENTICATED']);
    }
    const rest = await fetch(`${gateway.url}/transactions/${transactionId()}`, { headers: { authorization: 'made-up-http' } });
    expect(rest.status).toBe(401);
    // The gateway's words, not the upstream's ('invalid API key').
    expect(await rest.json()).toEqual({ errors: { message: 'The service did not accept the key' } });
    expect(upstream.callsTo('GET', '/transactions').filter((call) => call.authorization === 'made-up-http')).toHaveLength(0);
    expect(checksOf('made-up-http')).toBe(1);
  });

  it('costs one upstream call for 30 connections at once', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => closeCodeFor(gateway.url, 'made-up-flood')));
    expect(new Set(results.map((result) => result.code))).toEqual(new Set([4403]));
    expect(checksOf('made-up-flood')).toBe(1);
  });
});

describe('a key the upstream accepts', () => {
  it('gets the live feed over graphql-ws and SSE, checked once', async () => {
    expect(await waitFor(() => gateway.gateway.activeSubscriptions() === 0)).toBe(true);
    const client = wsClient(gateway.url, GOOD);
    const ws = subscribe(client, SUBSCRIPTION);
    const sse = await sseSubscribe(gateway.url, SUBSCRIPTION, GOOD);
    expect(sse.status).toBe(200);
    expect(await waitFor(() => gateway.gateway.activeSubscriptions() === 2)).toBe(true);
    await postWebhook(gateway.url, 'completed');
    expect((await ws.next()).data).toMatchObject({ transactionUpdated: { transactionId: transactionId(), status: 'completed' } });
    expect((await sse.next()).data).toMatchObject({ transactionUpdated: { transactionId: transactionId(), status: 'completed' } });
    expect(checksOf(GOOD)).toBe(1);
    sse.close();
    await client.dispose();
  });

  it('costs one upstream check per period, whatever it asks', async () => {
    const key = 'good-and-busy';
    upstream.keys.add(key);
    const answers = await Promise.all([
      // Not `vendings`: its own reads would be counted as checks.
      ...Array.from({ length: 10 }, () =>
        postGraphQL(gateway.url, `{ transaction(id: "${transactionId()}") { status } }`, { key }).then((answer) => answer.status),
      ),
      ...Array.from({ length: 10 }, () =>
        fetch(`${gateway.url}/transactions/${transactionId()}`, { headers: { authorization: key } }).then((answer) => answer.status),
      ),
    ]);
    expect(new Set(answers)).toEqual(new Set([200]));
    expect(await waitFor(() => gateway.gateway.activeSubscriptions() === 0)).toBe(true);
    const clients = Array.from({ length: 10 }, () => wsClient(gateway.url, key));
    clients.forEach((client) => subscribe(client, SUBSCRIPTION));
    expect(await waitFor(() => gateway.gateway.activeSubscriptions() === 10)).toBe(true);
    expect(checksOf(key)).toBe(1);
    await Promise.all(clients.map(async (client) => client.dispose()));
  });
});

describe('key checks', () => {
  it('are rate limited for the instance: many distinct made-up keys get 429, not upstream calls', async () => {
    const limited = await startForward({}, tuneUpstream({ keyCheck: { checksPerSecond: 3 } }));
    const keys = Array.from({ length: 30 }, (_, i) => `made-up-distinct-${i}`);
    const started = Date.now();
    const answers = await Promise.all(
      keys.map((key) => fetch(`${limited.url}/transactions/${transactionId()}`, { headers: { authorization: key } })),
    );
    const seconds = Math.floor((Date.now() - started) / 1_000) + 1;
    const checks = keys.reduce((sum, key) => sum + checksOf(key), 0);
    // At most the limit in any one second, whatever the speed of this machine.
    expect(checks).toBeGreaterThan(0);
    expect(checks).toBeLessThanOrEqual(3 * seconds);
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(checks);
    expect(statuses.filter((status) => status === 429)).toHaveLength(keys.length - checks);
    const tooMany = answers.find((answer) => answer.status === 429)!;
    expect(Number(tooMany.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await tooMany.json()) as { errors: { message: string } }).errors.message).toMatch(/key checks/i);
    expect(upstream.callsTo('GET', '/transactions').filter((call) => keys.includes(call.authorization ?? ''))).toHaveLength(0);
  });

  it(
    'that get no verdict (upstream failing) are not remembered: ' + 'graphql-ws closes 1013 and a default client gets in on its retry',
    async () => {
      const flaky = await startForward({}, tuneUpstream({ retries: 0 }));
      const key = 'good-after-retry';
      upstream.keys.add(key);
      upstream.injectFault({ kind: 'status', status: 500 }, { method: 'GET', pathPrefix: '/vendings', times: 2 });
      const rest = await fetch(`${flaky.url}/transactions/${transactionId()}`, { headers: { authorization: key } });
      expect(rest.status).toBe(502);
      const closes: number[] = [];
      const client = createClient({
        url: `${flaky.url.replace(/^http/, 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { Authorization: key },
        on: { closed: (event) => void closes.push((event as { code: number }).code) },
      });
      const sub = subscribe(client, SUBSCRIPTION);
      expect(await waitFor(() => flaky.gateway.activeSubscriptions() === 1, 8_000)).toBe(true);
      expect(closes).toEqual([1013]);
      await postWebhook(flaky.url, 'after-retry');
      expect((await sub.next()).data).toMatchObject({ transactionUpdated: { status: 'after-retry' } });
      expect(checksOf(key)).toBe(3);
      await client.dispose();
    },
    15_000,
  );
});

describe('a key revoked upstream', () => {
  it("loses its open graphql-ws and SSE subscriptions within the verdicts' lifetime", async () => {
    const quick = await startForward({}, tuneUpstream({ keyCheck: { ttlMs: 300 } }));
    const key = 'revoked-soon';
    upstream.keys.add(key);
    const client = createClient({
      url: `${quick.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: key },
    });
    const ws = subscribe(client, SUBSCRIPTION);
    const sse = await openSse(quick.url, key);
    expect(sse.status).toBe(200);
    expect(await waitFor(() => quick.gateway.activeSubscriptions() === 2)).toBe(true);
    await postWebhook(quick.url, 'before-revoke');
    expect((await ws.next()).data).toMatchObject({ transactionUpdated: { status: 'before-revoke' } });

    upstream.keys.delete(key);
    const revoked = await ws.next(3_000);
    expect(revoked.errors?.map((error) => (error as { extensions?: { code?: string } }).extensions?.code)).toEqual(['UNAUTHENTICATED']);
    expect(await within(ws.ended, 3_000, 'the graphql-ws subscription ending')).toBe('complete');
    const body = await within(sse.body, 3_000, 'the SSE stream ending');
    expect(body).toContain('before-revoke');
    const frames = body.split('\n\n').filter((frame) => frame.includes('event:'));
    expect(frames.at(-2)).toContain('"UNAUTHENTICATED"');
    expect(quick.gateway.activeSubscriptions()).toBe(0);

    await postWebhook(quick.url, 'after-revoke');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ws.received).toHaveLength(2);
    sse.close();
    await client.dispose();
  }, 15_000);
});

describe('a key sent as `Bearer <key>` (as the docs show)', () => {
  // A service that knows bare keys only: what the gateway forwards is what it judges.
  let strict: StandInUpstream;
  let forward: RunningGateway;
  beforeAll(async () => {
    strict = await startStandInUpstream({ keys: ['strict-key'], acceptsBearer: false });
    forward = await startForwardGateway(strict.url);
  });
  afterAll(async () => {
    await forward.close();
    await strict.close();
  });

  it.each(['strict-key', 'Bearer strict-key', 'bearer  strict-key'])(
    'reaches the service as the bare key over HTTP, REST, graphql-ws and SSE: %j',
    async (authorization) => {
      const id = (strict.transactions[0] as { transactionId: string }).transactionId;
      strict.calls.length = 0;
      const graphql = await postGraphQL(forward.url, `{ transaction(id: "${id}") { status } }`, { key: authorization });
      expect(graphql.status).toBe(200);
      expect(graphql.body.data).toEqual({ transaction: { status: 'active' } });
      const rest = await fetch(`${forward.url}/transactions/${id}`, { headers: { authorization } });
      expect(rest.status).toBe(200);

      const client = wsClient(forward.url, authorization);
      const ws = subscribe(client, SUBSCRIPTION);
      const sse = await sseSubscribe(forward.url, SUBSCRIPTION, authorization);
      expect(sse.status).toBe(200);
      expect(await waitFor(() => forward.gateway.activeSubscriptions() === 2)).toBe(true);
      const request = buildWebhookRequest({
        form: 'legacy',
        transaction: { transactionId: id, status: `live-${authorization}`, products: [] },
      });
      expect((await fetch(`${forward.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
      expect((await ws.next()).data).toMatchObject({ transactionUpdated: { status: `live-${authorization}` } });
      expect((await sse.next()).data).toMatchObject({ transactionUpdated: { status: `live-${authorization}` } });
      sse.close();
      await client.dispose();
      expect(await waitFor(() => forward.gateway.activeSubscriptions() === 0)).toBe(true);

      expect(strict.calls.length).toBeGreaterThan(0);
      expect(new Set(strict.calls.map((call) => call.authorization))).toEqual(new Set(['strict-key']));
    },
  );
});
