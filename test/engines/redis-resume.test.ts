import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Client } from 'graphql-ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { deliverWebhook, redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import { sseSubscribe, type SseSubscription } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient, type QueuedSubscription } from '../helpers/ws-client.js';
import { redisKeys } from '../../src/redis/redis-keys.js';

/*
 * Resuming over Redis: a replay from far back reads the log in pages (no
 * single command holds Redis long), a resume Redis cannot serve now waits
 * and fills its gap once Redis answers (it never ends the subscription, on
 * either transport), and hundreds resuming on a restarted instance leave it
 * answering its readiness probe.
 */

let deployments: RedisDeployments;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  deployments = await redisDeployments();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => deployments.close());

type Update = { transactionUpdated: { eventId: string; status: string } };

/** One deployment with a prefix the test knows (to look into its stream). */
async function deployment(count: number, prefix = `resume-${randomUUID()}:`): Promise<{ gateways: RunningGateway[]; prefix: string }> {
  return { gateways: await deployments.start(count, { REDIS_PREFIX: prefix }), prefix };
}

/** Publishes `ids` one after another (so the log holds them in this order). */
async function publish(gateway: RunningGateway, ids: string[]): Promise<void> {
  for (const id of ids) {
    const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: 'resume-tx', status: id, products: [] }, id });
    expect((await deliverWebhook(gateway, request)).status).toBe(200);
  }
}

const range = (from: number, to: number, name = 'e') => Array.from({ length: to - from }, (_, n) => `${name}-${from + n}`);
const eventIds = (subscription: QueuedSubscription<Update>) =>
  subscription.received.map((result) => result.data?.transactionUpdated.eventId ?? JSON.stringify(result.errors));
const resumeDocument = (after: string, name = 'Resume') =>
  `subscription ${name} { transactionUpdated(after: ${JSON.stringify(after)}) { eventId status } }`;

function client(gateway: RunningGateway): Client {
  const made = wsClient(gateway.url, TEST_KEY);
  cleanups.push(() => made.dispose());
  return made;
}

/** Whether `promise` is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([promise.then(() => false), new Promise<boolean>((resolve) => setTimeout(resolve, ms, true))]);
}

describe('resuming over Redis', () => {
  it('reads a replay from far back in pages: no XRANGE returns more than a page, and every event comes once, in order', async () => {
    const {
      gateways: [a],
    } = await deployment(1);
    const ids = range(0, 650, 'far');
    await publish(a!, ids);

    const observer = new Redis(deployments.redis.url);
    const monitor = await observer.monitor();
    cleanups.push(
      () => monitor.disconnect(),
      () => observer.disconnect(),
    );
    const ranges: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'xrange') ranges.push(args);
    });
    const resumed = subscribe<Update>(client(a!), resumeDocument('far-0'));
    expect(await waitFor(() => resumed.received.length >= ids.length - 1, 20_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(eventIds(resumed)).toEqual(ids.slice(1));

    // Four pages at least (649 events), each read bounded by COUNT.
    expect(ranges.length).toBeGreaterThanOrEqual(4);
    for (const args of ranges) {
      const count = args.findIndex((arg) => arg.toLowerCase() === 'count');
      expect(count, args.join(' ')).toBeGreaterThan(0);
      expect(Number(args[count + 1])).toBeLessThanOrEqual(201);
    }
  }, 60_000);

  it(
    'graphql-ws: a resume while Redis is stopped stays open and gets the gap once Redis is back, ' + 'then live events, each once',
    async () => {
      if (!deployments.redis.restartable) return console.warn('skipped: no redis-server binary on PATH, so the test cannot stop Redis');
      const {
        gateways: [a],
      } = await deployment(1);
      await publish(a!, range(0, 5));
      // Redis with persistence: what it held is there again when it comes back.
      await deployments.redis.save();
      await deployments.redis.stop();
      expect(await waitFor(() => !a!.gateway.ready(), 5_000)).toBe(true);

      const resumed = subscribe<Update>(client(a!), resumeDocument('e-1'));
      // Neither an error nor a `complete` while Redis is away.
      expect(await pendingAfter(resumed.ended, 2_000)).toBe(true);
      expect(resumed.received).toEqual([]);

      await deployments.redis.start();
      expect(await waitFor(() => resumed.received.length >= 3, 15_000)).toBe(true);
      await publish(a!, ['e-5']);
      expect(await waitFor(() => resumed.received.length >= 4, 5_000)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(eventIds(resumed)).toEqual(['e-2', 'e-3', 'e-4', 'e-5']);
      expect(await pendingAfter(resumed.ended, 10)).toBe(true);
    },
    60_000,
  );

  it(
    'graphql-ws: a resume waiting for a Redis that comes back empty ends with EVENTS_EXPIRED ' +
      '(its position is gone), never "Unexpected error."',
    async () => {
      if (!deployments.redis.restartable) return console.warn('skipped: no redis-server binary on PATH, so the test cannot stop Redis');
      const {
        gateways: [a],
      } = await deployment(1);
      await publish(a!, range(0, 3, 'lost'));
      await deployments.redis.stop();
      expect(await waitFor(() => !a!.gateway.ready(), 5_000)).toBe(true);
      const resumed = subscribe<Update>(client(a!), resumeDocument('lost-1'));
      expect(await pendingAfter(resumed.ended, 1_500)).toBe(true);
      // Without persistence: it restarts with nothing.
      await deployments.redis.start();
      const ended = (await Promise.race([resumed.ended, new Promise((resolve) => setTimeout(resolve, 15_000, 'still open'))])) as Array<{
        message: string;
        extensions?: { code?: string };
      }>;
      expect(Array.isArray(ended), JSON.stringify(ended)).toBe(true);
      expect(ended[0]?.extensions?.code).toBe('EVENTS_EXPIRED');
      expect(resumed.received).toEqual([]);
    },
    60_000,
  );

  it(
    'SSE with Last-Event-ID while Redis does not answer: 200, no `complete`, ' + 'and the gap once Redis answers, each event once',
    async () => {
      if (!deployments.redis.restartable) return console.warn('skipped: no redis-server binary on PATH, so the test cannot pause Redis');
      const {
        gateways: [a],
        prefix,
      } = await deployment(1);
      await publish(a!, range(0, 5));
      const inspect = new Redis(deployments.redis.url);
      cleanups.push(() => inspect.disconnect());
      const positions = (await inspect.xrange(redisKeys(prefix).stream, '-', '+')).map(([id]) => id);
      expect(positions).toHaveLength(5);

      // A stalled Redis: every command times out.
      deployments.redis.pause();
      cleanups.push(() => {
        try {
          deployments.redis.resume();
        } catch {
          // Already running.
        }
      });
      const sse: SseSubscription = await sseSubscribe(
        a!.url,
        'subscription { transactionUpdated { eventId status } }',
        TEST_KEY,
        undefined,
        {
          'last-event-id': positions[1]!,
        },
      );
      cleanups.push(() => sse.close());
      expect(sse.status).toBe(200);
      expect(await pendingAfter(sse.ended, 2_500)).toBe(true);

      deployments.redis.resume();
      const got: string[] = [];
      for (let n = 0; n < 3; n++) got.push((await sse.next(15_000)).data.transactionUpdated.eventId);
      await publish(a!, ['e-5']);
      got.push((await sse.next(5_000)).data.transactionUpdated.eventId);
      expect(got).toEqual(['e-2', 'e-3', 'e-4', 'e-5']);
      expect(sse.lastEventId()).not.toBe(positions[4]);
      expect(sse.raw()).not.toContain('event: complete');
      expect(await pendingAfter(sse.ended, 200)).toBe(true);
    },
    60_000,
  );

  it('a restarted instance with hundreds of resuming subscribers goes on answering /readyz while it replays', async () => {
    const prefix = `resume-${randomUUID()}:`;
    const {
      gateways: [before],
    } = await deployment(1, prefix);
    const ids = range(0, 1_000, 'many');
    await publish(before!, ids);
    await before!.close();
    const {
      gateways: [restarted],
    } = await deployment(1, prefix);

    // /readyz asked all along, one probe at a time, as an orchestrator would.
    const answers: Array<{ status: number; ms: number }> = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const started = performance.now();
        const response = await fetch(`${restarted!.url}/readyz`);
        await response.arrayBuffer();
        answers.push({ status: response.status, ms: performance.now() - started });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    const subscribers: QueuedSubscription<Update>[] = [];
    for (let c = 0; c < 20; c++) {
      const connection = client(restarted!);
      for (let s = 0; s < 10; s++) subscribers.push(subscribe<Update>(connection, resumeDocument('many-0', `R${c}x${s}`)));
    }
    const everyone = () => subscribers.every((subscription) => subscription.received.length >= ids.length - 1);
    const done = await waitFor(everyone, 120_000, 100);
    probing = false;
    await prober;
    expect(done).toBe(true);
    for (const subscription of subscribers) expect(eventIds(subscription)).toEqual(ids.slice(1));

    const slowest = Math.max(...answers.map((answer) => answer.ms));
    console.log(
      `/readyz during ${subscribers.length} replays of ${ids.length - 1} events: ` +
        `${answers.length} answers, slowest ${slowest.toFixed(0)} ms`,
    );
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    // Hundreds of replays, a bounded amount of work: the bound catches a hang, not a busy machine (55 s to 136 s in clean-clone runs).
  }, 600_000);
});
