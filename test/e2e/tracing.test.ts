import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { createLogger } from '../../src/logging/logger.js';
import type { Config } from '../../src/config/config.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';
import { jsonLines } from '../helpers/log-lines.js';

/*
 * Tracing: a gateway pointed at an OTLP/HTTP collector (a
 * receiver this test starts) exports spans with the right parents: request →
 * GraphQL → upstream call, carrying the caller's traceparent on and sending
 * one upstream; webhook → publication → each subscriber's delivery, also
 * across instances through Redis. Off (no endpoint), nothing is sent on.
 */

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;
const TRANSACTION = '8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e01';
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

let receiver: OtlpReceiver;
let upstream: StandInUpstream;
let running: RunningGateway;
const logLines: Array<Record<string, unknown>> = [];

const tracingEnv = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gateway-under-test' });
/** Spans exported within 20 ms of ending, so the receiver has them at once. */
const exportAtOnce = (config: Config): Config => ({ ...config, tracing: config.tracing && { ...config.tracing, exportDelayMs: 20 } });

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  upstream = await startStandInUpstream();
  const destination = jsonLines<Record<string, unknown>>((line) => logLines.push(line));
  running = await startGateway(
    { BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: 'upstream-key', WEBHOOK_SECRET: SECRET, ...tracingEnv() },
    { logger: createLogger('debug', { traceIds: true, destination }) },
    exportAtOnce,
  );
});
afterAll(async () => {
  await running?.close();
  await upstream?.close();
  await receiver?.close();
});

const newTraceparent = () => ({ traceId: randomBytes(16).toString('hex'), parentId: randomBytes(8).toString('hex') });
const inTrace = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
const named = (spans: ReceivedSpan[], name: string) => spans.find((span) => span.name === name);
const childOf = (spans: ReceivedSpan[], parent: ReceivedSpan | undefined, name: string) =>
  spans.find((span) => span.name === name && span.parentSpanId === parent?.spanId);

describe('tracing on', () => {
  it("continues the caller's traceparent through the GraphQL operation to the upstream call, and sends one upstream", async () => {
    const { traceId, parentId } = newTraceparent();
    const response = await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: TEST_KEY, traceparent: `00-${traceId}-${parentId}-01` },
      body: JSON.stringify({
        query: 'query OneTransaction($id: ID!) { transaction(id: $id) { transactionId status } }',
        variables: { id: TRANSACTION },
      }),
    });
    expect((await response.json()).data.transaction.transactionId).toBe(TRANSACTION);
    expect(
      await waitFor(
        () => named(inTrace(traceId), 'GET /transactions/{id}') !== undefined && named(inTrace(traceId), 'POST /graphql') !== undefined,
        5_000,
      ),
    ).toBe(true);

    const spans = inTrace(traceId);
    const server = named(spans, 'POST /graphql')!;
    expect(server).toMatchObject({ kind: SERVER, parentSpanId: parentId, serviceName: 'gateway-under-test' });
    expect(server.attributes).toMatchObject({ 'http.route': '/graphql', 'http.response.status_code': 200 });
    expect(childOf(spans, server, 'graphql.parse')).toBeDefined();
    expect(childOf(spans, server, 'graphql.validate')).toBeDefined();
    const operation = childOf(spans, server, 'query.OneTransaction');
    expect(operation?.attributes).toMatchObject({
      'graphql.execute.operationName': 'OneTransaction',
      'graphql.execute.operationType': 'query',
    });
    const call = childOf(spans, operation, 'GET /transactions/{id}');
    expect(call).toMatchObject({ kind: CLIENT });
    expect(call!.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.template': '/transactions/{id}',
      'http.response.status_code': 200,
      'vending_gateway.upstream.attempts': 1,
    });

    // The upstream was asked with the client span as its parent.
    const sent = upstream.requestHeaders
      .filter((each) => each.path === `/transactions/${TRANSACTION}`)
      .map((each) => each.headers.traceparent);
    expect(sent).toContain(`00-${traceId}-${call!.spanId}-01`);
    // The request's log line names the trace.
    expect(logLines.find((line) => line.msg === 'request' && line.trace_id === traceId)).toMatchObject({ span_id: server.spanId });
    // A line written inside the operation (the upstream call's, at debug) names the span active then.
    expect(logLines.find((line) => line.msg === 'upstream call' && line.trace_id === traceId)).toMatchObject({
      span_id: operation!.spanId,
    });
  });

  it('makes no span for probes and scrapes', async () => {
    const { traceId, parentId } = newTraceparent();
    for (const path of ['/healthz', '/readyz', '/metrics'])
      expect((await fetch(`${running.url}${path}`, { headers: { traceparent: `00-${traceId}-${parentId}-01` } })).status).toBe(200);
    // A request after them, in another trace: once its span is in, theirs would be too.
    const later = newTraceparent();
    await fetch(`${running.url}/vendings`, {
      headers: { authorization: TEST_KEY, traceparent: `00-${later.traceId}-${later.parentId}-01` },
    });
    expect(await waitFor(() => inTrace(later.traceId).some((span) => span.kind === SERVER), 5_000)).toBe(true);
    expect(inTrace(traceId)).toEqual([]);
  });

  it("counts retries on the upstream call's span", async () => {
    const { traceId, parentId } = newTraceparent();
    upstream.injectFault({ kind: 'status', status: 503 }, { method: 'GET', pathPrefix: '/transactions/', times: 1 });
    const response = await fetch(`${running.url}/transactions/${TRANSACTION}`, {
      headers: { authorization: TEST_KEY, traceparent: `00-${traceId}-${parentId}-01` },
    });
    expect(response.status).toBe(200);
    expect(
      await waitFor(() => named(inTrace(traceId), 'GET /transactions/{id}') !== undefined && inTrace(traceId).length >= 2, 5_000),
    ).toBe(true);
    const spans = inTrace(traceId);
    const server = spans.find((span) => span.kind === SERVER)!;
    expect(server).toMatchObject({ name: 'GET /transactions/{id}', parentSpanId: parentId });
    expect(childOf(spans, server, 'GET /transactions/{id}')?.attributes).toMatchObject({
      'vending_gateway.upstream.attempts': 2,
      'http.response.status_code': 200,
    });
  });

  it("links each subscriber's delivery to the webhook that published the event, in the webhook's trace", async () => {
    const client = wsClient(running.url, TEST_KEY);
    const sub = subscribe(client, 'subscription Live { transactionUpdated { eventId status } }');
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);
    const request = buildWebhookRequest({
      form: 'enveloped',
      secret: SECRET,
      transaction: { transactionId: TRANSACTION, status: 'completed', products: [] },
    });
    const posted = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
    expect(posted.status).toBe(200);
    const { data } = await sub.next(5_000);
    const eventId = (data as { transactionUpdated: { eventId: string } }).transactionUpdated.eventId;
    // Subscribers receive what they always did.
    expect(data).toEqual({ transactionUpdated: { eventId, status: 'completed' } });

    const delivery = () =>
      receiver.spans.find((span) => span.name === 'deliver transactionUpdated' && span.attributes['messaging.message.id'] === eventId);
    expect(
      await waitFor(() => delivery() !== undefined && named(inTrace(delivery()!.traceId), 'POST /webhooks') !== undefined, 5_000),
    ).toBe(true);
    const spans = inTrace(delivery()!.traceId);
    const webhook = named(spans, 'POST /webhooks')!;
    expect(webhook.kind).toBe(SERVER);
    expect(childOf(spans, webhook, 'webhook verify')).toBeDefined();
    const publish = childOf(spans, webhook, 'publish transaction.update')!;
    expect(publish).toMatchObject({ kind: PRODUCER });
    expect(publish.attributes).toMatchObject({ 'messaging.message.id': eventId, 'vending_gateway.webhook.outcome': 'published' });
    expect(delivery()).toMatchObject({
      kind: CONSUMER,
      parentSpanId: publish.spanId,
      links: [{ traceId: publish.traceId, spanId: publish.spanId }],
    });
    await client.dispose();
  });
});

describe('tracing SSE subscribers', () => {
  it("puts an SSE subscription under its request's span, and links its deliveries to the webhook", async () => {
    const { traceId, parentId } = newTraceparent();
    const sub = await sseSubscribe(running.url, 'subscription Watch { transactionUpdated { eventId } }', TEST_KEY, undefined, {
      traceparent: `00-${traceId}-${parentId}-01`,
    });
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);
    const request = buildWebhookRequest({
      form: 'enveloped',
      secret: SECRET,
      transaction: { transactionId: TRANSACTION, status: 'refunded', products: [] },
    });
    expect((await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
    const eventId = ((await sub.next(5_000)) as { data: { transactionUpdated: { eventId: string } } }).data.transactionUpdated.eventId;
    sub.close();
    const delivery = () =>
      receiver.spans.find((span) => span.name === 'deliver transactionUpdated' && span.attributes['messaging.message.id'] === eventId);
    const publish = () =>
      receiver.spans.find((span) => span.name === 'publish transaction.update' && span.attributes['messaging.message.id'] === eventId);
    // The stream's own spans end with it.
    expect(
      await waitFor(
        () => delivery() !== undefined && publish() !== undefined && named(inTrace(traceId), 'subscription.Watch') !== undefined,
        5_000,
      ),
    ).toBe(true);
    expect(delivery()).toMatchObject({ parentSpanId: publish()!.spanId, links: [{ spanId: publish()!.spanId }] });
    const stream = named(inTrace(traceId), 'POST /graphql')!;
    expect(stream.parentSpanId).toBe(parentId);
    expect(childOf(inTrace(traceId), stream, 'subscription.Watch')).toBeDefined();
  });
});

describe('tracing through Redis', () => {
  let deployments: RedisDeployments;
  beforeAll(async () => {
    deployments = await redisDeployments();
  });
  afterAll(() => deployments?.close());

  it('links a delivery on one instance to the webhook another instance published', async () => {
    const [a, b] = await deployments.start(2, tracingEnv(), exportAtOnce);
    const client = wsClient(b!.url, TEST_KEY);
    const sub = subscribe(client, 'subscription Remote { transactionUpdated { eventId } }');
    expect(await waitFor(() => b!.gateway.activeSubscriptions() === 1)).toBe(true);
    const request = buildWebhookRequest({ form: 'legacy', transaction: { transactionId: 'tx-redis', status: 'paid', products: [] } });
    expect((await fetch(`${a!.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
    const { data } = await sub.next(5_000);
    const eventId = (data as { transactionUpdated: { eventId: string } }).transactionUpdated.eventId;
    const delivery = () =>
      receiver.spans.find((span) => span.name === 'deliver transactionUpdated' && span.attributes['messaging.message.id'] === eventId);
    const publish = () =>
      receiver.spans.find((span) => span.name === 'publish transaction.update' && span.attributes['messaging.message.id'] === eventId);
    expect(await waitFor(() => delivery() !== undefined && publish() !== undefined, 5_000)).toBe(true);
    expect(delivery()).toMatchObject({
      traceId: publish()!.traceId,
      parentSpanId: publish()!.spanId,
      links: [{ spanId: publish()!.spanId }],
    });
    await client.dispose();
  });
});

/**
 * The OpenTelemetry packages a built gateway (dist/, as `npm start` runs it) has loaded once listening
 * with `env`; they are CommonJS, so the module cache names them.
 */
function openTelemetryLoaded(env: Record<string, string>): string[] {
  const script = `
    import { createRequire } from 'node:module';
    const { loadConfig } = await import('./dist/config/config.js');
    const { createGateway } = await import('./dist/app/gateway.js');
    const gateway = createGateway(loadConfig({ PORT: '0', LOG_LEVEL: 'silent', ...${JSON.stringify(env)} }));
    await gateway.listen();
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes('@opentelemetry/'));
    console.log(JSON.stringify([...new Set(loaded.map((path) => path.replace(/.*node_modules\\/@opentelemetry\\/([^/]+).*/, '$1')))]));
    await gateway.close();`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    encoding: 'utf8',
    timeout: 15_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as string[];
}

describe('tracing off', () => {
  it('loads the OpenTelemetry API alone, no SDK module (and on, the SDK)', () => {
    expect(openTelemetryLoaded({})).toEqual(['api']);
    expect(openTelemetryLoaded({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })).toEqual(
      expect.arrayContaining(['sdk-trace-node', 'exporter-trace-otlp-http']),
    );
  });

  it('sends no traceparent upstream, whatever the caller sent', async () => {
    const plain = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: 'upstream-key' });
    try {
      const before = upstream.requestHeaders.length;
      const { traceId, parentId } = newTraceparent();
      const response = await fetch(`${plain.url}/transactions/${TRANSACTION}`, {
        headers: { authorization: TEST_KEY, traceparent: `00-${traceId}-${parentId}-01` },
      });
      expect(response.status).toBe(200);
      const calls = upstream.requestHeaders.slice(before);
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) expect(call.headers.traceparent).toBeUndefined();
    } finally {
      await plain.close();
    }
  });
});
