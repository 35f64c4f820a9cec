import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest, type WebhookRequest } from '../../src/events/webhook-request.js';
import { OTHER_KEY, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { deliverWebhook } from '../helpers/redis-deployment.js';
import { redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient, type QueuedSubscription } from '../helpers/ws-client.js';
import { jsonLines } from '../helpers/log-lines.js';

/*
 * A Redis that stops answering (SIGSTOP: its connections
 * stay open, nothing comes back) stalls no request. While it is paused,
 * requests that pass the rate limiter are answered (the limit fails open), webhooks get 503 with Retry-After, readiness says 503; after
 * SIGCONT everything comes back by itself. Before the fix a rate-limited
 * request hung for as long as Redis did and readiness stayed 200.
 */

/** Far above every bound asserted: a request that hangs is cut here, so the test reports a time instead of timing out. */
const GIVE_UP_MS = 12_000;
/** "Answered promptly": generous, since the machine is shared; before the fix these took as long as the stall. */
const PROMPT_MS = 3_000;

interface Timed {
  status: number;
  ms: number;
  retryAfter: string | null;
}

async function timed(url: string, init: RequestInit = {}): Promise<Timed> {
  const started = performance.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(GIVE_UP_MS) });
    await response.arrayBuffer();
    return { status: response.status, ms: Math.round(performance.now() - started), retryAfter: response.headers.get('retry-after') };
  } catch {
    return { status: 0, ms: Math.round(performance.now() - started), retryAfter: null };
  }
}

const rest = (gateway: RunningGateway, key = TEST_KEY) => timed(`${gateway.url}/vendings`, { headers: { authorization: key } });
const graphql = (gateway: RunningGateway) =>
  timed(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization: TEST_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ vendings { totalCount } }' }),
  });
const legacyWebhook = (status: string) =>
  buildWebhookRequest({ form: 'legacy', transaction: { transactionId: `tx-${randomUUID()}`, status, products: [] } });
const envelopedWebhook = (status: string) =>
  buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: `tx-${randomUUID()}`, status, products: [] } });
const post = (gateway: RunningGateway, request: WebhookRequest) =>
  timed(`${gateway.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
const webhook = (gateway: RunningGateway, status: string) => post(gateway, legacyWebhook(status));
const readyz = async (gateway: RunningGateway) => (await timed(`${gateway.url}/readyz`)).status;

/** Polls readiness until it answers `status`; returns the milliseconds it took, or undefined. */
async function readinessBecomes(gateway: RunningGateway, status: number, withinMs: number): Promise<number | undefined> {
  const started = performance.now();
  while (performance.now() - started < withinMs) {
    if ((await readyz(gateway)) === status) return Math.round(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

// Pausing needs a redis-server of the test's own (CI installs one: .ci/run).
describe.skipIf(!redisServerOnPath())('a stalled Redis (SIGSTOP)', () => {
  let redis: TestRedis;
  let a: RunningGateway;
  let b: RunningGateway;
  const warnings: string[] = [];
  const clients: Array<ReturnType<typeof wsClient>> = [];
  let onA: QueuedSubscription;
  let onB: QueuedSubscription;
  let pausedAt = 0;

  beforeAll(async () => {
    redis = await startTestRedis();
    const sink = jsonLines<{ level: number; msg: string }>((entry) => {
      if (entry.level >= 40) warnings.push(entry.msg);
    });
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: `stall-${randomUUID()}:`, RATE_LIMIT_PER_SECOND: '5' };
    a = await startGateway(env, { logger: pino({ level: 'warn' }, sink) });
    b = await startGateway(env);
    const feed = (gateway: RunningGateway) => {
      const client = wsClient(gateway.url, TEST_KEY);
      clients.push(client);
      return subscribe(client, 'subscription { transactionUpdated { transactionId status } }');
    };
    onA = feed(a);
    onB = feed(b);
    // Both subscriptions are live once an event reaches them.
    for (let attempt = 0; onA.received.length === 0 || onB.received.length === 0; attempt++) {
      if (attempt === 50) throw new Error('subscriptions never went live');
      expect((await deliverWebhook(a, legacyWebhook('before'))).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    onA.received.splice(0);
    onB.received.splice(0);
  });

  afterAll(async () => {
    // Whatever failed above, the server is let go and killed: a stopped redis-server must not outlive the test.
    try {
      redis?.resume();
    } catch {
      // not running
    }
    await Promise.all(clients.map(async (client) => client.dispose()));
    await Promise.all([a?.close(), b?.close()]);
    await redis?.close();
  }, 30_000);

  /** After SIGCONT: ready again, webhooks reach the subscribers of both instances, the rate limit is shared again. */
  async function expectRecovered(label: string): Promise<void> {
    const readyA = await readinessBecomes(a, 200, 10_000);
    console.info(`${label}: readiness 200 again after`, readyA, 'ms');
    expect(readyA).toBeDefined();
    expect(await readinessBecomes(b, 200, 10_000)).toBeDefined();

    const status = `after-${randomUUID()}`;
    const request = buildWebhookRequest({ form: 'legacy', transaction: { transactionId: `tx-${randomUUID()}`, status, products: [] } });
    expect((await deliverWebhook(b, request)).status).toBe(200);
    // A webhook answered 503 during the stall may be published now too (Redis runs what it had read): only this one is awaited.
    const got = (sub: QueuedSubscription) => sub.received.some((result) => result.data?.transactionUpdated?.status === status);
    expect(await waitFor(() => got(onA) && got(onB), 10_000)).toBe(true);

    // After a quiet second the key starts a fresh window: 4 requests on each instance are 8 for a limit of 5,
    // refused only when the instances count together.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => rest(n % 2 === 0 ? a : b, OTHER_KEY)));
    expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
    expect(answers.filter((answer) => answer.status === 429).length).toBeGreaterThanOrEqual(1);
  }

  describe('paused while nothing asks', () => {
    beforeAll(() => {
      redis.pause();
      pausedAt = performance.now();
    });

    it('reports not ready within a few seconds, with no request to notice it', async () => {
      const tookMs = await readinessBecomes(a, 503, 8_000);
      console.info('idle stall: readiness 503 after', tookMs, 'ms');
      expect(tookMs).toBeDefined();
      expect(await readinessBecomes(b, 503, 8_000)).toBeDefined();
      expect(warnings.some((message) => /Redis cannot take the event log's writes/.test(message))).toBe(true);
    });

    it('answers REST and GraphQL requests, and webhooks 503 with Retry-After, promptly', async () => {
      const answers = await Promise.all([rest(a), graphql(b), webhook(a, 'idle-stall')]);
      console.info('idle stall, requests once it is known:', answers);
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 503]);
      expect(Number(answers[2].retryAfter)).toBeGreaterThanOrEqual(1);
      for (const answer of answers) expect(answer.ms).toBeLessThan(PROMPT_MS);
      expect(warnings.some((message) => /rate limits are not enforced \(failing open\)/i.test(message))).toBe(true);
    });

    it('fails the rate limit open: a key past its limit on one instance is still served', async () => {
      // 8 requests of one key at one instance for a limit of 5: counted anywhere (shared or alone), some would be 429.
      const answers = await Promise.all(Array.from({ length: 8 }, () => rest(a, OTHER_KEY)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    });

    it('recovers by itself after a stall of several seconds', async () => {
      // Long enough for both connections to be dropped and tried again a few times while Redis is frozen.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 5_000 - (performance.now() - pausedAt))));
      redis.resume();
      await expectRecovered('idle stall');
    });
  });

  describe('paused under requests', () => {
    // One deduplicated by its id, one (legacy, without id) by its content.
    const refused = [envelopedWebhook(`busy-${randomUUID()}`), legacyWebhook(`busy-${randomUUID()}`)];
    const statusOf = (request: WebhookRequest) => (JSON.parse(request.body) as { data: { status: string } }).data.status;

    beforeAll(() => {
      redis.pause();
      pausedAt = performance.now();
    });

    it('answers the requests that meet the stall promptly: REST and GraphQL served, webhooks 503 with Retry-After', async () => {
      const answers = await Promise.all([rest(a), graphql(a), rest(b), post(a, refused[0]!), post(b, refused[1]!)]);
      console.info('busy stall, requests as it starts:', answers);
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 503, 503]);
      for (const answer of answers) expect(answer.ms).toBeLessThan(PROMPT_MS);
      for (const answer of answers.slice(3)) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    });

    it('reports not ready within a few seconds of the stall', async () => {
      expect(await readinessBecomes(a, 503, 8_000)).toBeDefined();
      console.info('busy stall: readiness 503', Math.round(performance.now() - pausedAt), 'ms after the pause');
      expect(await readinessBecomes(b, 503, 8_000)).toBeDefined();
    });

    it('recovers by itself', async () => {
      redis.resume();
      await expectRecovered('busy stall');
    });

    it('publishes each webhook refused during the stall once, when its sender retries', async () => {
      // Redis may yet run a command that timed out: the event is then published on resume, and the retry is a redelivery.
      for (const request of refused) expect((await deliverWebhook(a, request)).status).toBe(200);
      const times = (sub: QueuedSubscription, status: string) =>
        sub.received.filter((result) => result.data?.transactionUpdated?.status === status).length;
      const once = () => refused.every((request) => times(onA, statusOf(request)) === 1 && times(onB, statusOf(request)) === 1);
      expect(await waitFor(once, 10_000)).toBe(true);
      // Let a second copy arrive before counting again.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(once()).toBe(true);
    });
  });
});
