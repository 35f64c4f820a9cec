import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { forwardModeEnv, startGateway, TEST_KEY, tuneUpstream, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/** Prometheus text → { 'name{labels}': value }, checking every sample line's syntax on the way. */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) ([-+0-9.eEInfNa]+)$/.exec(line);
    expect(match, line).not.toBeNull();
    samples.set(match![1]!, Number(match![2]));
  }
  return samples;
}

const scrape = async (url: string) => {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  return parseMetrics(await response.text());
};

describe('health, readiness and metrics', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway();
  });
  afterAll(() => running.close());

  it('answers /healthz and /readyz without a key; readiness names its checks, here and in the metrics', async () => {
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${running.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { accepting: true, events: true, upstream: true } });
    const samples = await scrape(running.url);
    expect(samples.get('vending_gateway_ready')).toBe(1);
    for (const check of ['accepting', 'events', 'upstream'])
      expect(samples.get(`vending_gateway_readiness_check{check="${check}"}`)).toBe(1);
  });

  it("echoes a caller's x-request-id and makes one otherwise", async () => {
    const given = await fetch(`${running.url}/vendings`, { headers: { authorization: TEST_KEY, 'x-request-id': 'trace-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const made = await fetch(`${running.url}/vendings`, { headers: { authorization: TEST_KEY } });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('counts what the test did', async () => {
    const before = await scrape(running.url);
    const at = (samples: Map<string, number>, key: string) => samples.get(key) ?? 0;

    for (let i = 0; i < 3; i++) await postGraphQL(running.url, 'query FleetCount { vendings { totalCount } }');
    await postGraphQL(running.url, 'query Broken { transaction(id: "nope") { status } }');
    await fetch(`${running.url}/transactions/nope`, { headers: { authorization: TEST_KEY } });
    const webhook = buildWebhookRequest({
      form: 'enveloped',
      transaction: { transactionId: 't-1', status: 's', products: [] },
      id: 'metrics-1',
    });
    for (let i = 0; i < 2; i++) await fetch(`${running.url}/webhooks`, { method: 'POST', headers: webhook.headers, body: webhook.body });
    await fetch(`${running.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"data":{}}' });
    // Another event is acknowledged and counted by type, not refused, so its sender does not retry it.
    await fetch(`${running.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"event":"order"}' });
    const client = wsClient(running.url, TEST_KEY);
    subscribe(client, 'subscription { transactionUpdated { eventId } }');
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);

    const after = await scrape(running.url);
    const delta = (key: string) => at(after, key) - at(before, key);
    expect(delta('vending_gateway_requests_total{transport="graphql",operation="FleetCount",outcome="2xx"}')).toBe(3);
    expect(delta('vending_gateway_requests_total{transport="graphql",operation="Broken",outcome="error"}')).toBe(1);
    expect(delta('vending_gateway_requests_total{transport="rest",operation="GET /transactions/{id}",outcome="4xx"}')).toBe(1);
    expect(delta('vending_gateway_request_duration_seconds_count{transport="graphql",operation="FleetCount"}')).toBe(3);
    expect(delta('vending_gateway_webhooks_received_total')).toBe(4);
    expect(delta('vending_gateway_webhooks_published_total')).toBe(1);
    expect(delta('vending_gateway_webhooks_deduplicated_total')).toBe(1);
    expect(delta('vending_gateway_webhooks_rejected_total{reason="unreadable"}')).toBe(1);
    expect(delta('vending_gateway_webhooks_ignored_total{type="order"}')).toBe(1);
    expect(at(after, 'vending_gateway_active_subscriptions')).toBe(1);
    await client.dispose();
  });
});

describe('while stopping', () => {
  it(
    'answers not ready with accepting false during SHUTDOWN_GRACE_MS, ' + 'on a connection still open, and says so in the metrics',
    async () => {
      const running = await startGateway({ SHUTDOWN_GRACE_MS: '5000' });
      // One kept-alive connection: the grace lasts while a client holds one, as a load balancer's would.
      const pool = new Pool(running.url, { connections: 1 });
      try {
        expect((await pool.request({ path: '/readyz', method: 'GET' })).statusCode).toBe(200);
        const closed = running.close();
        const answer = await pool.request({ path: '/readyz', method: 'GET' });
        expect(answer.statusCode).toBe(503);
        expect(await answer.body.json()).toEqual({ status: 'not ready', checks: { accepting: false, events: true, upstream: true } });
        const metrics = parseMetrics(await (await pool.request({ path: '/metrics', method: 'GET' })).body.text());
        expect(metrics.get('vending_gateway_ready')).toBe(0);
        expect(metrics.get('vending_gateway_readiness_check{check="accepting"}')).toBe(0);
        await pool.close();
        await closed;
      } finally {
        await pool.destroy();
      }
    },
  );
});

describe('in front of a failing upstream', () => {
  let upstream: StandInUpstream;
  let running: RunningGateway;
  beforeAll(async () => {
    upstream = await startStandInUpstream({ keys: [TEST_KEY] });
    running = await startGateway(
      forwardModeEnv(upstream.url),
      {},
      // 4: the forward-mode key check is one successful call in the window too.
      tuneUpstream({ retries: 0, breaker: { minimumCalls: 4, resetTimeoutMs: 300 } }),
    );
  });
  afterAll(async () => {
    await running.close();
    await upstream.close();
  });

  it('opens the breaker, says so on /readyz and /metrics, and recovers', async () => {
    const id = (upstream.transactions[0] as { transactionId: string }).transactionId;
    // Not the key check's path (GET /vendings), which a forwarding gateway asks first.
    upstream.injectFault({ kind: 'status', status: 500 }, { times: 5, pathPrefix: '/transactions' });
    for (let i = 0; i < 5; i++) await fetch(`${running.url}/transactions/${id}`, { headers: { authorization: TEST_KEY } });
    const notReady = await fetch(`${running.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ status: 'not ready', checks: { accepting: true, events: true, upstream: false } });
    const open = await scrape(running.url);
    expect(open.get('vending_gateway_upstream_circuit_open')).toBe(1);
    expect(open.get('vending_gateway_ready')).toBe(0);
    expect(open.get('vending_gateway_readiness_check{check="upstream"}')).toBe(0);
    expect(
      open.get('vending_gateway_upstream_requests_total{method="GET",route="/transactions/{id}",outcome="500"}'),
    ).toBeGreaterThanOrEqual(3);

    const calls = upstream.calls.length;
    const fast = await postGraphQL(running.url, `{ transaction(id: "${id}") { status } }`);
    expect(fast.body.errors?.[0]?.extensions?.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(upstream.calls.length).toBe(calls);

    upstream.clearFaults();
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect((await fetch(`${running.url}/transactions/${id}`, { headers: { authorization: TEST_KEY } })).status).toBe(200);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    expect((await scrape(running.url)).get('vending_gateway_upstream_circuit_open')).toBe(0);
  });
});
