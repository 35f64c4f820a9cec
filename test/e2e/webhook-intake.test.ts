import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, it, type TestContext } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { sseSubscribe, type SseSubscription } from '../helpers/sse-client.js';

/*
 * What POST /webhooks takes besides a plain transaction.update:
 * other event types are acknowledged and counted, not refused, and
 * compressed bodies are decoded within MAX_BODY_BYTES of decoded size.
 * "Nothing published" is proven without sleeping: an SSE subscriber gets a
 * sentinel webhook sent afterwards as its very next event.
 */

const SUBSCRIPTION = 'subscription { transactionUpdated { transactionId status } }';
const uid = (prefix: string) => `${prefix}-${randomUUID()}`;
const legacy = (transactionId: string, status = 'completed') =>
  JSON.stringify({ event: 'transaction', data: { transactionId, status, products: [{ productId: 'p-1', quantity: 1 }] } });

interface Harness {
  running: RunningGateway;
  sse: SseSubscription;
  post(body: string | Buffer, headers?: Record<string, string>): Promise<{ status: number; text: string }>;
  /** Posts a good legacy webhook and expects the subscriber's next event to be it. */
  expectNextIsSentinel(): Promise<void>;
  metrics(): Promise<string>;
}

async function open(ctx: TestContext, env: Record<string, string> = {}): Promise<Harness> {
  const running = await startGateway(env);
  const sse = await sseSubscribe(running.url, SUBSCRIPTION, TEST_KEY);
  ctx.onTestFinished(async () => {
    sse.close();
    await running.close();
  });
  const post: Harness['post'] = async (body, headers = {}) => {
    const response = await fetch(`${running.url}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
    return { status: response.status, text: await response.text() };
  };
  return {
    running,
    sse,
    post,
    async expectNextIsSentinel() {
      const id = uid('sentinel');
      ctx.expect(await post(legacy(id, 'sentinel'))).toEqual({ status: 200, text: '' });
      ctx.expect((await sse.next(5_000)).data.transactionUpdated).toEqual({ transactionId: id, status: 'sentinel' });
    },
    metrics: async () => (await fetch(`${running.url}/metrics`)).text(),
  };
}

/** The `type` label values of vending_gateway_webhooks_ignored_total, with their counts. */
function ignoredByType(metrics: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const match of metrics.matchAll(/^vending_gateway_webhooks_ignored_total\{type="((?:[^"\\]|\\.)*)"\} (\d+)$/gm)) {
    counts.set(match[1]!, Number(match[2]));
  }
  return counts;
}

describe.concurrent('webhooks about something else', () => {
  it('an envelope of another type and a legacy body of another event: 200, empty body, nothing published, counted by type', async (ctx) => {
    const gw = await open(ctx);
    const vending = {
      id: uid('evt'),
      type: 'vending.update',
      timestamp: new Date().toISOString(),
      data: { vendingId: 'v-1', status: 'offline' },
    };
    ctx.expect(await gw.post(JSON.stringify(vending))).toEqual({ status: 200, text: '' });
    ctx.expect(await gw.post(JSON.stringify({ ...vending, id: uid('evt') }))).toEqual({ status: 200, text: '' });
    ctx.expect(await gw.post(JSON.stringify({ event: 'vending', data: { vendingId: 'v-1' } }))).toEqual({ status: 200, text: '' });
    await gw.expectNextIsSentinel();
    const counts = ignoredByType(await gw.metrics());
    ctx.expect(Object.fromEntries(counts)).toEqual({ 'vending.update': 2, vending: 1 });
  });

  it('the signature is still checked first: an unsigned other-type webhook to a gateway with a secret is 401', async (ctx) => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const running = await startGateway({ WEBHOOK_SECRET: secret });
    ctx.onTestFinished(() => running.close());
    const response = await fetch(`${running.url}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'vending.update', data: {} }),
    });
    ctx.expect(response.status).toBe(401);
    ctx.expect(ignoredByType(await (await fetch(`${running.url}/metrics`)).text()).size).toBe(0);
  });

  it.for<[string, string]>([
    ['not JSON', '{"type": "vending.update",'],
    ['an array', '[{"type":"vending.update"}]'],
    ['an object with neither type nor event', '{"data":{}}'],
    ['a type that is not a string', '{"type":7,"data":{}}'],
    ['an empty type', '{"type":"","data":{}}'],
    ['an event that is not a string', '{"event":{"name":"vending"},"data":{}}'],
  ])('a body that is not a webhook stays 400: %s', async ([, body], ctx) => {
    const gw = await open(ctx);
    ctx.expect((await gw.post(body)).status).toBe(400);
    await gw.expectNextIsSentinel();
    ctx.expect(ignoredByType(await gw.metrics()).size).toBe(0);
  });

  it('a flood of random types keeps the label set bounded', async (ctx) => {
    const gw = await open(ctx);
    const types = [...Array.from({ length: 150 }, () => `t.${randomUUID()}`), 'x'.repeat(500), 'bad"label\nwith{braces}', 'vending.update'];
    for (const type of types) ctx.expect(await gw.post(JSON.stringify({ type, data: {} }))).toEqual({ status: 200, text: '' });
    await gw.expectNextIsSentinel();
    const counts = ignoredByType(await gw.metrics());
    ctx.expect(counts.size).toBeLessThanOrEqual(21);
    ctx.expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(types.length);
    ctx.expect(counts.get('other')).toBeGreaterThanOrEqual(types.length - 20);
    for (const label of counts.keys()) ctx.expect(label).toMatch(/^[A-Za-z0-9_.:-]{1,64}$/);
  });
});

/** Standard Webhooks headers over `body` (the decoded payload), computed with node:crypto. */
function signed(secret: string, body: string): Record<string, string> {
  const id = uid('msg');
  const timestamp = String(Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`,
  };
}

describe.concurrent('compressed webhooks', () => {
  it.for<[string, (body: Buffer) => Buffer]>([
    ['gzip', (b) => gzipSync(b)],
    ['x-gzip', (b) => gzipSync(b)],
    ['deflate', (b) => deflateSync(b)],
    ['identity', (b) => b],
    ['br', (b) => brotliCompressSync(b)],
    ['GZip', (b) => gzipSync(b)],
  ])('Content-Encoding: %s is decoded and published', async ([encoding, compress], ctx) => {
    const gw = await open(ctx);
    const id = uid('tx');
    ctx.expect(await gw.post(compress(Buffer.from(legacy(id))), { 'content-encoding': encoding })).toEqual({ status: 200, text: '' });
    ctx.expect((await gw.sse.next(5_000)).data.transactionUpdated).toEqual({ transactionId: id, status: 'completed' });
  });

  it('deflate without the zlib wrapper (raw, as some senders send it) is decoded too', async (ctx) => {
    const gw = await open(ctx);
    const id = uid('tx');
    ctx
      .expect(await gw.post(deflateRawSync(Buffer.from(legacy(id))), { 'content-encoding': 'deflate' }))
      .toEqual({ status: 200, text: '' });
    ctx.expect((await gw.sse.next(5_000)).data.transactionUpdated.transactionId).toBe(id);
  });

  it('a signed gzip webhook is verified over the decoded payload', async (ctx) => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const gw = await open(ctx, { WEBHOOK_SECRET: secret });
    const id = uid('tx');
    const body = legacy(id);
    ctx
      .expect(await gw.post(gzipSync(Buffer.from(body)), { 'content-encoding': 'gzip', ...signed(secret, body) }))
      .toEqual({ status: 200, text: '' });
    ctx.expect((await gw.sse.next(5_000)).data.transactionUpdated.transactionId).toBe(id);
  });

  it.for<[string, () => Buffer]>([
    ['corrupt gzip', () => Buffer.concat([gzipSync(Buffer.from(legacy('t'))).subarray(0, 10), randomBytes(64)])],
    ['truncated gzip', () => gzipSync(Buffer.from(legacy('t'))).subarray(0, 30)],
    ['not gzip at all', () => Buffer.from(legacy('t'))],
  ])('%s → 400 with the error envelope, nothing published', async ([, make], ctx) => {
    const gw = await open(ctx);
    const response = await fetch(`${gw.running.url}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: new Uint8Array(make()),
    });
    ctx.expect(response.status).toBe(400);
    ctx.expect(await response.json()).toEqual({ errors: { message: ctx.expect.stringMatching(/gzip/) } });
    await gw.expectNextIsSentinel();
  });

  it.for(['zstd', 'compress', 'gzip;q=1', 'br, zstd'])('Content-Encoding: %s → 415 naming what is accepted', async (encoding, ctx) => {
    const gw = await open(ctx);
    const response = await fetch(`${gw.running.url}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      body: legacy('t'),
    });
    ctx.expect(response.status).toBe(415);
    ctx.expect(await response.json()).toEqual({ errors: { message: ctx.expect.stringMatching(/gzip, deflate/) } });
    await gw.expectNextIsSentinel();
  });

  it('a decoded body one byte over MAX_BODY_BYTES is 413; exactly at it is taken', async (ctx) => {
    const gw = await open(ctx, { MAX_BODY_BYTES: '2048' });
    const id = uid('tx');
    const exact = (bytes: number) => {
      const empty = JSON.stringify({ event: 'transaction', data: { transactionId: id, status: 'completed', products: [], note: '' } });
      return JSON.stringify({
        event: 'transaction',
        data: { transactionId: id, status: 'completed', products: [], note: 'x'.repeat(bytes - empty.length) },
      });
    };
    ctx.expect((await gw.post(gzipSync(exact(2049)), { 'content-encoding': 'gzip' })).status).toBe(413);
    ctx.expect(await gw.post(gzipSync(exact(2048)), { 'content-encoding': 'gzip' })).toEqual({ status: 200, text: '' });
    ctx.expect((await gw.sse.next(5_000)).data.transactionUpdated.transactionId).toBe(id);
  });

  it('a gzip bomb (512 KB that decodes to 512 MB) is 413 and never inflated into memory', async (ctx) => {
    const gw = await open(ctx);
    // Gzip members may be concatenated (RFC 1952 §2.2): 512 copies of a 1 MiB-of-zeros member.
    const member = gzipSync(Buffer.alloc(1 << 20));
    const bomb = Buffer.concat(Array.from({ length: 512 }, () => member));
    ctx.expect(bomb.length).toBeLessThan(1 << 20);
    const peakBefore = process.resourceUsage().maxRSS; // KiB, the process's peak so far
    const answer = await gw.post(bomb, { 'content-encoding': 'gzip' });
    ctx.expect(answer.status).toBe(413);
    ctx.expect(JSON.parse(answer.text)).toEqual({ errors: { message: 'Request body is larger than 1048576 bytes' } });
    const grewMiB = (process.resourceUsage().maxRSS - peakBefore) / 1024;
    ctx.expect(grewMiB).toBeLessThan(128);
    await gw.expectNextIsSentinel();
  });
});

describe.concurrent('what a sender may put in ids (found by an attacker trial)', () => {
  const envelope = (id: unknown, transactionId = uid('tx')) =>
    JSON.stringify({ id, type: 'transaction.update', data: { transactionId, status: 'completed', products: [] } });

  it.for<[string, string, Record<string, string>]>([
    ['an envelope id over 256 characters', envelope('e'.repeat(257)), {}],
    ['a webhook-id header over 256 characters', legacy(uid('tx')), { 'webhook-id': 'w'.repeat(257) }],
    ['a transactionId over 256 characters', envelope(uid('evt'), 't'.repeat(257)), {}],
  ])('%s → 400 naming the bound, nothing published (ids are kept for a day: their size is bounded)', async ([, body, headers], ctx) => {
    const gw = await open(ctx);
    const answer = await gw.post(body, headers);
    ctx.expect(answer.status).toBe(400);
    ctx.expect(answer.text).toMatch(/longer than 256 bytes/);
    ctx.expect(answer.text.length).toBeLessThan(400);
    await gw.expectNextIsSentinel();
  });

  it('an id of exactly 256 characters is taken', async (ctx) => {
    const gw = await open(ctx);
    const tx = uid('tx');
    ctx.expect(await gw.post(envelope('e'.repeat(256), tx))).toEqual({ status: 200, text: '' });
    ctx.expect((await gw.sse.next(5_000)).data.transactionUpdated.transactionId).toBe(tx);
  });

  it('an empty envelope id counts as none (published, deduplicated by content), not as a body to retry for days', async (ctx) => {
    const gw = await open(ctx);
    const tx = uid('tx');
    ctx.expect(await gw.post(envelope('', tx))).toEqual({ status: 200, text: '' });
    ctx.expect(await gw.post(envelope('', tx))).toEqual({ status: 200, text: '' });
    ctx.expect((await gw.sse.next(5_000)).data.transactionUpdated.transactionId).toBe(tx);
    await gw.expectNextIsSentinel();
  });

  it('more than two content codings → 415 before any decoding', async (ctx) => {
    const gw = await open(ctx);
    const body = gzipSync(gzipSync(gzipSync(Buffer.from(legacy(uid('tx'))))));
    const answer = await gw.post(body, { 'content-encoding': 'gzip, gzip, gzip' });
    ctx.expect(answer.status).toBe(415);
    ctx.expect(answer.text).toMatch(/at most 2/);
    await gw.expectNextIsSentinel();
  });
});
