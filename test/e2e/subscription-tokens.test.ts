import { Writable } from 'node:stream';
import { EventSource } from 'eventsource';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import type { Config } from '../../src/config/config.js';
import { forwardModeEnv, startGateway, TEST_KEY, tuneUpstream, type RunningGateway } from '../helpers/gateway.js';
import { startStandInUpstream } from '../helpers/stand-in-upstream.js';
import { redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * Subscription tokens: what an EventSource, which cannot send a key, starts
 * an SSE subscription with. A token is minted with a key holding `subscribe`,
 * starts one stream, and nothing else: not a query, not REST, not a second
 * stream, not after it expired; it never reaches the log.
 */

const started: RunningGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((running) => running.close()));
});

const logText: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    logText.push(chunk.toString('utf8'));
    done();
  },
});

async function gateway(env: Record<string, string> = {}, ttlMs?: number, tune = (config: Config) => config): Promise<RunningGateway> {
  const running = await startGateway(env, { logger: pino({ level: 'debug' }, sink) }, (config) =>
    tune(ttlMs === undefined ? config : { ...config, subscriptionTokenTtlMs: ttlMs }),
  );
  started.push(running);
  return running;
}

async function mint(running: RunningGateway, key = TEST_KEY): Promise<Response> {
  return fetch(`${running.url}/subscription-tokens`, { method: 'POST', headers: { authorization: key } });
}

async function tokenOf(running: RunningGateway): Promise<string> {
  const response = await mint(running);
  expect(response.status).toBe(201);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const { data } = (await response.json()) as { data: { token: string; expiresAt: string } };
  expect(Date.parse(data.expiresAt)).toBeGreaterThan(Date.now());
  return data.token;
}

const LIVE = 'subscription { transactionUpdated { eventId status } }';
const streamUrl = (running: RunningGateway, token: string, query = LIVE) =>
  `${running.url}/graphql?query=${encodeURIComponent(query)}&token=${encodeURIComponent(token)}`;
/** What an EventSource sends: a GET asking for SSE, with no key. */
const sseGet = (url: string) => fetch(url, { headers: { accept: 'text/event-stream' } });

async function post(running: RunningGateway, status: string, transactionId = 'tx-token'): Promise<void> {
  const request = buildWebhookRequest({
    form: 'enveloped',
    transaction: { transactionId, status, products: [{ productId: 'p-1', productName: 'Cola', productPrice: 1.5, quantity: 1 }] },
  });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

/** An EventSource with default settings (no custom fetch: it sends no key), noting each event's status. */
function listen(url: string) {
  const source = new EventSource(url);
  const statuses: string[] = [];
  let failed = false;
  source.addEventListener('next', (message) =>
    statuses.push((JSON.parse(message.data) as { data: { transactionUpdated: { status: string } } }).data.transactionUpdated.status),
  );
  source.addEventListener('error', () => {
    if (source.readyState === EventSource.CLOSED) failed = true;
  });
  return { source, statuses, failed: () => failed };
}

describe('subscription tokens', () => {
  it('a token minted with a key starts one EventSource stream, which receives events', async () => {
    const running = await gateway();
    const token = await tokenOf(running);
    const { source, statuses } = listen(streamUrl(running, token));
    try {
      expect(await waitFor(() => running.gateway.activeSubscriptions() === 1, 10_000)).toBe(true);
      await post(running, 'paid');
      expect(await waitFor(() => statuses.length === 1, 10_000)).toBe(true);
      expect(statuses).toEqual(['paid']);
      // Good once: the same URL (what the EventSource would reconnect with) is refused.
      const again = await sseGet(streamUrl(running, token));
      expect(again.status).toBe(401);
      expect(((await again.json()) as { errors: Array<{ message: string }> }).errors[0]!.message).toMatch(/unknown, used or expired/);
    } finally {
      source.close();
    }
    // The token is in no log line (the request line names the path without its query).
    const log = logText.join('');
    expect(log).toContain('"path":"/graphql"');
    expect(log).not.toContain(token);
  });

  it('is refused for a query or a mutation, on REST, in Authorization, and for a POST', async () => {
    const running = await gateway();
    // A query over the SSE route: the token stands for `subscribe` only.
    const query = await sseGet(streamUrl(running, await tokenOf(running), '{ vendings { totalCount } }'));
    expect(await query.text()).toMatch(/FORBIDDEN/);
    const mutation = await sseGet(
      streamUrl(
        running,
        await tokenOf(running),
        'mutation { updateTransactionPayment(transactionId: "t", payment: {}) { transaction { status } } }',
      ),
    );
    // yoga runs no mutation from a GET; as a POST, the token is not read at all.
    expect(await mutation.text()).toMatch(/from a POST request/);
    const posted = await fetch(streamUrl(running, await tokenOf(running)), {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { updateTransactionPayment(transactionId: "t", payment: {}) { transaction { status } } }' }),
    });
    expect(posted.status).toBe(401);

    const token = await tokenOf(running);
    // Another route, in the URL or as a key.
    expect((await fetch(`${running.url}/vendings?token=${token}`)).status).toBe(401);
    expect((await fetch(`${running.url}/vendings`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    expect((await fetch(`${running.url}/subscription-tokens?token=${token}`, { method: 'POST' })).status).toBe(401);
    // /graphql as a key, or in the URL of a JSON request.
    const asKey = await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ vendings { totalCount } }' }),
    });
    expect(asKey.status).toBe(401);
    const jsonGet = await fetch(`${streamUrl(running, token, '{ vendings { totalCount } }')}`);
    expect(jsonGet.status).toBe(401);
    // None of those took it: it still starts its stream.
    const stream = await sseGet(streamUrl(running, token));
    expect(stream.status).toBe(200);
    await stream.body?.cancel();
  });

  it('is refused once expired, and when it is not one', async () => {
    const running = await gateway({}, 200);
    const token = await tokenOf(running);
    // Waits for the expiry itself (a token's lifetime is a wall-clock matter).
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await sseGet(streamUrl(running, token))).status).toBe(401);
    expect((await sseGet(streamUrl(running, 'vgst_forged'))).status).toBe(401);
    expect((await sseGet(streamUrl(running, `vgst_${'A'.repeat(43)}`))).status).toBe(401);
  });

  it('is minted only with a key that may subscribe', async () => {
    const running = await gateway({ API_KEYS: `${TEST_KEY}, reader-key:read` });
    expect((await mint(running, 'reader-key')).status).toBe(403);
    expect((await fetch(`${running.url}/subscription-tokens`, { method: 'POST' })).status).toBe(401);
    expect((await mint(running, 'unknown-key')).status).toBe(401);
    expect((await fetch(`${running.url}/subscription-tokens`)).status).toBe(405);
  });

  it('answers a listed origin’s preflight and mint, and no other origin', async () => {
    const running = await gateway({ CORS_ORIGINS: 'https://dash.example' });
    const preflight = await fetch(`${running.url}/subscription-tokens`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://dash.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://dash.example');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    const minted = await fetch(`${running.url}/subscription-tokens`, {
      method: 'POST',
      headers: { authorization: TEST_KEY, origin: 'https://dash.example' },
    });
    expect(minted.headers.get('access-control-allow-origin')).toBe('https://dash.example');
    const other = await fetch(`${running.url}/subscription-tokens`, {
      method: 'POST',
      headers: { authorization: TEST_KEY, origin: 'https://evil.example' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('subscription tokens in forward mode', () => {
  it('carry the client’s own key: the service judges it, and revoking it ends the stream', async () => {
    const upstream = await startStandInUpstream({ keys: ['forwarded-key'] });
    try {
      const running = await gateway(forwardModeEnv(upstream.url), undefined, tuneUpstream({ keyCheck: { ttlMs: 300 } }));
      const token = await (async () => {
        const response = await mint(running, 'forwarded-key');
        expect(response.status).toBe(201);
        return ((await response.json()) as { data: { token: string } }).data.token;
      })();
      const stream = await sseGet(streamUrl(running, token));
      expect(stream.status).toBe(200);
      let text = '';
      const decoder = new TextDecoder();
      const reading = (async () => {
        const reader = stream.body!.getReader();
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
          text += decoder.decode(chunk.value, { stream: true });
      })();
      expect(await waitFor(() => running.gateway.activeSubscriptions() === 1, 10_000)).toBe(true);
      // In forward mode a key receives the events of transactions the service lets it read.
      await post(running, 'before-revoke', (upstream.transactions[0] as { transactionId: string }).transactionId);
      expect(await waitFor(() => text.includes('before-revoke'), 10_000)).toBe(true);
      upstream.keys.delete('forwarded-key');
      await reading;
      expect(text).toContain('"UNAUTHENTICATED"');
      expect(upstream.requestHeaders.every((request) => request.headers.authorization !== token)).toBe(true);
    } finally {
      await upstream.close();
    }
  }, 30_000);
});

describe.skipIf(!redisServerOnPath())('subscription tokens with Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  }, 30_000);
  afterAll(async () => {
    await redis?.close();
  });

  it('a token minted on one instance starts its stream on another, once', async () => {
    const a = await gateway({ REDIS_URL: redis.url });
    const b = await gateway({ REDIS_URL: redis.url });
    const token = await tokenOf(a);
    const { source, statuses } = listen(streamUrl(b, token));
    try {
      expect(await waitFor(() => b.gateway.activeSubscriptions() === 1, 10_000)).toBe(true);
      await post(a, 'shared');
      expect(await waitFor(() => statuses.length === 1, 10_000)).toBe(true);
      expect((await sseGet(streamUrl(a, token))).status).toBe(401);
    } finally {
      source.close();
    }
  });
});
