import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { jsonLines } from '../helpers/log-lines.js';

/*
 * A late event loop is not a dead Redis. The gateway runs in this process, so
 * a busy loop here starves its event loop exactly as CPU contention does in
 * production. Each round holds the gateway's writes at Redis (CLIENT PAUSE
 * WRITE) only until they are certainly in flight, lets them go (CLIENT
 * UNPAUSE: Redis answers at once, well within the bound) and starves the loop
 * for longer than the bound; the answers wait in the socket meanwhile. Before the fix, the command timers (run before the socket is
 * read) declared those commands timed out: webhooks answered 503, the rate
 * limit failed open, the connection was dropped and readiness went 503.
 */

/** Longer than the command bound (1 s, src/config/fixed.ts): every command in flight outlives it. */
const STARVED_MS = 1_500;
/** The longest Redis holds the writes, should the test fail before it lets them go. */
const HELD_AT_MOST_MS = 5_000;
const ROUNDS = 3;
const WEBHOOKS_PER_ROUND = 8;

function starve(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the gateway's event loop is this one: nothing else runs meanwhile
  }
}

describe.skipIf(!redisServerOnPath())('a starved event loop with Redis healthy', () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  let redis: TestRedis;
  let admin: Redis;
  let gateway: RunningGateway;
  const warnings: string[] = [];
  const readiness: number[] = [];
  let probing = true;
  let probes: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    redis = await startTestRedis();
    admin = new Redis(redis.url);
    const sink = jsonLines<{ level: number; msg: string }>((entry) => {
      if (entry.level >= 40) warnings.push(entry.msg);
    });
    // A rate limit far above what the test sends: every REST request asks Redis, none is refused.
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: `late-${randomUUID()}:`, RATE_LIMIT_PER_SECOND: '1000', WEBHOOK_SECRET: secret };
    gateway = await startGateway(env, { logger: pino({ level: 'warn' }, sink) });
    // Readiness asked all along, as an orchestrator does.
    probes = (async () => {
      while (probing) {
        const response = await fetch(`${gateway.url}/readyz`).catch(() => undefined);
        readiness.push(response?.status ?? 0);
        await response?.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
  });

  afterAll(async () => {
    probing = false;
    await probes;
    await admin?.call('CLIENT', 'UNPAUSE').catch(() => {});
    admin?.disconnect();
    await gateway?.close();
    await redis?.close();
  }, 30_000);

  /** Whether Redis holds one of the gateway's writes (a client blocked by CLIENT PAUSE). */
  async function writesHeld(): Promise<boolean> {
    const info = await admin.info('clients');
    return Number(/blocked_clients:(\d+)/.exec(info)?.[1] ?? 0) > 0;
  }

  it('answers every signed webhook 200, never reads as not ready, and warns of nothing', async () => {
    const statuses: number[] = [];
    let roundsHeld = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await admin.call('CLIENT', 'PAUSE', String(HELD_AT_MOST_MS), 'WRITE');
      const answers = [
        ...Array.from({ length: WEBHOOKS_PER_ROUND }, () => {
          const request = buildWebhookRequest({
            form: 'enveloped',
            secret,
            transaction: { transactionId: `tx-${randomUUID()}`, status: `late-${round}`, products: [] },
          });
          return fetch(`${gateway.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
        }),
        // Counted by the shared rate limit (a write too): it must count, not fail open.
        fetch(`${gateway.url}/vendings`, { headers: { authorization: TEST_KEY } }),
      ];
      // Once the gateway's commands are at Redis, Redis is let go (it answers at once) and the loop starved past the bound.
      let held = false;
      for (let attempt = 0; attempt < 500 && !held; attempt++) held = await writesHeld();
      if (held) roundsHeld++;
      void admin.call('CLIENT', 'UNPAUSE');
      starve(STARVED_MS);
      for (const response of await Promise.all(answers)) {
        statuses.push(response.status);
        await response.arrayBuffer();
      }
    }
    console.info(
      'starved loop: statuses',
      statuses.join(' '),
      '| rounds with commands in flight',
      roundsHeld,
      '| readiness',
      readiness.join(' '),
      '| warnings',
      warnings,
    );
    expect(statuses).toEqual(Array(ROUNDS * (WEBHOOKS_PER_ROUND + 1)).fill(200));
    expect(warnings).toEqual([]);
    // Readiness was asked during each starved round and after it.
    expect(readiness.length).toBeGreaterThan(ROUNDS);
    expect(readiness.filter((status) => status !== 200)).toEqual([]);
    // Each round did starve the loop with commands in flight.
    expect(roundsHeld).toBe(ROUNDS);
  });
});
