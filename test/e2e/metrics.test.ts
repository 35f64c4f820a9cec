import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import { startGateway, TEST_KEY } from '../helpers/gateway.js';

const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? [-+0-9.eEInfNa]+$/;
const COMMENT = /^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped))$/;

/** Lines that are not valid Prometheus text exposition; empty when the whole text is valid. */
function invalidLines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '' && !(line.startsWith('#') ? COMMENT.test(line) : SAMPLE.test(line)));
}

/** `name{sorted labels}` → value, so lookups do not depend on the order prom-client prints labels in. */
function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || line.startsWith('#')) continue;
    const labels = [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => ({ k: k ?? '', v: v ?? '' }));
    samples.set(key(match[1] ?? '', Object.fromEntries(labels.map(({ k, v }) => [k, v]))), Number(match[3]));
  }
  return samples;
}

function key(name: string, labels: Record<string, string> = {}): string {
  const sorted = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${labels[k]}"`);
  return `${name}{${sorted.join(',')}}`;
}

/** A real gateway (memory backend) on a free port, its GraphQL and its /metrics: the front door counts every answer. */
async function setup() {
  const running = await startGateway();
  const graphql = (body: Record<string, unknown>) =>
    fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: TEST_KEY },
      body: JSON.stringify(body),
    });
  const scrape = async () => {
    const response = await fetch(`${running.url}/metrics`);
    const text = await response.text();
    return { response, text, samples: parseSamples(text) };
  };
  return { running, graphql, scrape, close: () => running.close() };
}

const HELLO = 'query Hello { vendings { totalCount } }';

describe('metrics of a gateway', () => {
  it('counts requests by transport, operation and outcome, and serves valid Prometheus text', async () => {
    const { running, graphql, scrape, close } = await setup();
    try {
      expect((await graphql({ query: HELLO, operationName: 'Hello' })).status).toBe(200);
      expect((await graphql({ query: HELLO, operationName: 'Hello' })).status).toBe(200);
      // No operationName: the name comes from the document; the resolver error makes it `error`.
      const boom = await graphql({ query: 'query Boom { transaction(id: "nope") { status } }' });
      expect(((await boom.json()) as { errors?: unknown[] }).errors).toHaveLength(1);
      // A validation error never executes; over application/json yoga still answers 200.
      const invalid = await graphql({ query: '{ nope }' });
      expect(invalid.status).toBe(200);
      await fetch(`${running.url}/transactions/tx-123`, { headers: { authorization: TEST_KEY } });
      await fetch(`${running.url}/transactions/tx-456`, { headers: { authorization: TEST_KEY } });
      await fetch(`${running.url}/transactions/tx-1/payment`, { method: 'PUT', body: '{}' });
      await fetch(`${running.url}/some/raw/path/tx-789`);
      await fetch(`${running.url}/webhooks`, { method: 'POST', body: '{}' });

      await scrape(); // scraping itself is never counted
      const { response, text, samples } = await scrape();

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(invalidLines(text)).toEqual([]);

      const requests = (transport: string, operation: string, outcome: string) =>
        samples.get(key('vending_gateway_requests_total', { transport, operation, outcome }));
      expect(requests('graphql', 'Hello', '2xx')).toBe(2);
      expect(requests('graphql', 'Boom', 'error')).toBe(1);
      expect(requests('graphql', 'anonymous', 'error')).toBe(1);
      expect(requests('rest', 'GET /transactions/{id}', '4xx')).toBe(2);
      // Without a key: counted in a series that exists from the start (so such requests add no series), never under the route's own.
      expect(requests('rest', 'unauthenticated', '4xx')).toBe(1);
      expect(requests('rest', 'PUT /transactions/{id}/payment', '4xx')).toBeUndefined();
      expect(requests('rest', 'other', '4xx')).toBe(1);
      expect(requests('webhook', 'POST /webhooks', '4xx')).toBe(1);
      const counted = [...samples].filter(([k]) => k.startsWith('vending_gateway_requests_total{'));
      expect(counted.reduce((sum, [, v]) => sum + v, 0)).toBe(9);
      // Bounded labels: no ids, no raw paths, no trace of /metrics.
      expect(text).not.toMatch(/tx-|raw\/path|\/metrics/);
      expect(samples.get(key('vending_gateway_request_duration_seconds_count', { transport: 'graphql', operation: 'Hello' }))).toBe(2);
    } finally {
      await close();
    }
  });

  it('counts upstream calls, webhook outcomes and gauges, in Prometheus text', async () => {
    let subscriptions = 3;
    const metrics = createMetrics({});
    metrics.gauge('active_subscriptions', 'GraphQL subscriptions open on this instance', () => subscriptions);
    metrics.gauge('upstream_circuit_open', '1 while the upstream circuit breaker is open', () => 1);
    metrics.upstreamCall({ method: 'GET', route: '/transactions/{id}', outcome: 200, durationMs: 120, attempts: 1 });
    metrics.upstreamCall({ method: 'GET', route: '/transactions/{id}', outcome: 200, durationMs: 80, attempts: 1 });
    metrics.upstreamCall({ method: 'GET', route: '/transactions/{id}', outcome: 'UPSTREAM_TIMEOUT', durationMs: 5000, attempts: 3 });
    for (const outcome of ['published', 'published', 'duplicate', 'bad-signature', 'unavailable'] as const) metrics.webhook(outcome);
    subscriptions = 5;
    const text = await metrics.render();
    const samples = parseSamples(text);
    expect(metrics.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(invalidLines(text)).toEqual([]);

    expect(
      samples.get(key('vending_gateway_upstream_requests_total', { method: 'GET', route: '/transactions/{id}', outcome: '200' })),
    ).toBe(2);
    expect(
      samples.get(
        key('vending_gateway_upstream_requests_total', { method: 'GET', route: '/transactions/{id}', outcome: 'UPSTREAM_TIMEOUT' }),
      ),
    ).toBe(1);
    expect(samples.get(key('vending_gateway_upstream_request_duration_seconds_count', { route: '/transactions/{id}' }))).toBe(3);
    expect(samples.get(key('vending_gateway_upstream_request_duration_seconds_sum', { route: '/transactions/{id}' }))).toBeCloseTo(5.2);

    expect(samples.get(key('vending_gateway_webhooks_received_total'))).toBe(5);
    expect(samples.get(key('vending_gateway_webhooks_published_total'))).toBe(2);
    expect(samples.get(key('vending_gateway_webhooks_deduplicated_total'))).toBe(1);
    expect(samples.get(key('vending_gateway_webhooks_rejected_total', { reason: 'bad-signature' }))).toBe(1);
    expect(samples.get(key('vending_gateway_webhooks_rejected_total', { reason: 'unavailable' }))).toBe(1);
    expect(samples.get(key('vending_gateway_webhooks_rejected_total', { reason: 'too-large' }))).toBe(0);

    expect(samples.get(key('vending_gateway_active_subscriptions'))).toBe(5);
    expect(samples.get(key('vending_gateway_upstream_circuit_open'))).toBe(1);
    expect(samples.has(key('process_cpu_user_seconds_total'))).toBe(true);
  });

  it('keeps registries apart and leaves out the circuit gauge where there is no breaker', async () => {
    const first = await setup();
    const second = await setup();
    try {
      await first.graphql({ query: '{ vendings { totalCount } }' });
      const a = await first.scrape();
      const b = await second.scrape();
      expect(a.samples.get(key('vending_gateway_requests_total', { transport: 'graphql', operation: 'anonymous', outcome: '2xx' }))).toBe(
        1,
      );
      expect([...b.samples].filter(([k, v]) => k.startsWith('vending_gateway_requests_total{') && v > 0)).toEqual([]);
      // The memory backend has no circuit breaker: no gauge says it is closed.
      expect([...a.samples.keys()].filter((k) => k.startsWith('vending_gateway_upstream_circuit_open'))).toEqual([]);
      expect(invalidLines(await createMetrics({}).render())).toEqual([]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('caps operation names in length and in number, and answers only GET on the metrics path', async () => {
    const { running, graphql, scrape, close } = await setup();
    try {
      const long = `Q${'x'.repeat(99)}`;
      await graphql({ query: `query ${long} { vendings { totalCount } }` });
      for (let i = 0; i < 100; i += 1) await graphql({ query: `query Op${i} { vendings { totalCount } }` });
      expect((await fetch(`${running.url}/metrics`, { method: 'POST' })).status).toBe(405);
      const { samples } = await scrape();
      const ok = (operation: string) =>
        samples.get(key('vending_gateway_requests_total', { transport: 'graphql', operation, outcome: '2xx' }));
      expect(ok(long.slice(0, 64))).toBe(1);
      expect(ok('Op98')).toBe(1);
      expect(ok('Op99')).toBeUndefined(); // the 101st distinct name
      expect(ok('other')).toBe(1);
    } finally {
      await close();
    }
  });
});
