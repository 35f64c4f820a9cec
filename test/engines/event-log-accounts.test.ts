import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { createEventBus } from '../../src/events/event-bus.js';
import { createMemoryEventLog, type EventLog, type LoggedEvent } from '../../src/events/event-log.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { createRedisClients } from '../../src/redis/redis-clients.js';
import { createRedisEventLog } from '../../src/redis/redis-event-log.js';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The event log per account, in process and in Redis alike: an event id and a
 * transaction's last content are remembered per account, an event id given to
 * resume is looked up in its account, and the event's account survives the
 * log (Redis: its stream, which the history reads too, and its live channel). Then what
 * only Redis has: the keys, the default account's exactly as before accounts.
 */

const event = (eventId: string, account: string | undefined, transactionId = 'tx-1', status = 'paid'): TransactionUpdateEvent => ({
  eventId,
  ...(account === undefined ? {} : { account }),
  type: 'transaction.update',
  format: 'ENVELOPED',
  receivedAt: new Date(0).toISOString(),
  occurredAt: undefined,
  transactionId,
  status,
  products: [],
  transaction: { transactionId, status, products: [] },
  raw: {},
});

const named = (logged: LoggedEvent[]) => logged.map(({ event: e }) => `${e.account ?? ''}/${e.eventId}`);

let redis: TestRedis;
let inspect: Redis;
beforeAll(async () => {
  redis = await startTestRedis();
  inspect = new Redis(redis.url);
});
afterAll(async () => {
  inspect.disconnect();
  await redis.close();
});

interface Logs {
  prefix: string;
  /** A log of the deployment (a Redis log: another instance each time). */
  open(): Promise<EventLog>;
}

function memoryLogs(): Logs {
  const log = createMemoryEventLog({ capacity: 1_000, maxBytes: 1_048_576, pageEvents: 200 });
  return { prefix: '', open: async () => log };
}

function redisLogs(ctx: TestContext): Logs {
  const prefix = `test-${randomUUID()}:`;
  return {
    prefix,
    async open() {
      const clients = createRedisClients(
        { kind: 'standalone', url: redis.url },
        { commandTimeoutMs: 1_000, probeKey: redisKeys(prefix).writeProbe },
      );
      const log = createRedisEventLog(clients, { prefix, capacity: 1_000, pageEvents: 200, historyGroup: 'history', replicaWaitMs: 500 });
      ctx.onTestFinished(async () => {
        await log.close();
        await clients.close();
      });
      await log.whenLive();
      return log;
    },
  };
}

const kinds: Array<[name: string, logsFor: (ctx: TestContext) => Logs]> = [
  ['in process', () => memoryLogs()],
  ['in Redis', redisLogs],
];

for (const [name, logsFor] of kinds)
  describe.concurrent(`the event log ${name}, per account`, () => {
    it('publishes the same event id from two accounts and the default one, and drops a redelivery within its account only', async (ctx) => {
      const log = await logsFor(ctx).open();
      const id = `msg-${randomUUID()}`;
      for (const account of [undefined, 'acct-a', 'acct-b']) expect(await log.append(event(id, account), 'id'), account).toBeDefined();
      expect(await log.append(event(id, 'acct-a', 'tx-other', 'other'), 'id')).toBeUndefined();
      expect(await log.append(event(id, undefined), 'id')).toBeUndefined();
      expect(await log.append(event(`${id}-2`, 'acct-a'), 'id')).toBeDefined();
    });

    it("tells a legacy redelivery by its content among its own account's events", async (ctx) => {
      const log = await logsFor(ctx).open();
      const tx = `tx-${randomUUID()}`;
      for (const account of [undefined, 'acct-a', 'acct-b'])
        expect(await log.append(event(`gw_${randomUUID()}`, account, tx, 'pending'), 'content'), account).toBeDefined();
      expect(await log.append(event(`gw_${randomUUID()}`, 'acct-a', tx, 'pending'), 'content')).toBeUndefined();
      // Another account's change does not make this account's same content new.
      expect(await log.append(event(`gw_${randomUUID()}`, 'acct-b', tx, 'completed'), 'content')).toBeDefined();
      expect(await log.append(event(`gw_${randomUUID()}`, 'acct-a', tx, 'pending'), 'content')).toBeUndefined();
      expect(await log.append(event(`gw_${randomUUID()}`, 'acct-a', tx, 'completed'), 'content')).toBeDefined();
    });

    it("resumes after an event id of the account named (the default one when none), with every account's events after it", async (ctx) => {
      const log = await logsFor(ctx).open();
      const id = `msg-${randomUUID()}`;
      await log.append(event(id, 'acct-a'), 'id');
      await log.append(event('e2', 'acct-b'), 'id');
      await log.append(event(id, undefined), 'id');
      await log.append(event('e4', undefined), 'id');
      await log.append(event(id, 'acct-b'), 'id');
      await log.append(event('e6', 'acct-a'), 'id');
      // The account's event carries its name back out of the log (Redis: the stream's JSON).
      expect(named((await log.readAfter(id, 'acct-a')).events)).toEqual(['acct-b/e2', `/${id}`, '/e4', `acct-b/${id}`, 'acct-a/e6']);
      expect(named((await log.readAfter(id)).events)).toEqual(['/e4', `acct-b/${id}`, 'acct-a/e6']);
      expect(named((await log.readAfter(id, '')).events)).toEqual(['/e4', `acct-b/${id}`, 'acct-a/e6']);
      expect(named((await log.readAfter(id, 'acct-b')).events)).toEqual(['acct-a/e6']);
      // An id only another account sent names nothing here.
      await expect(log.readAfter('e2', 'acct-a')).rejects.toMatchObject({ extensions: { code: 'EVENTS_EXPIRED' } });
      await expect(log.readAfter('e2')).rejects.toMatchObject({ extensions: { code: 'EVENTS_EXPIRED' } });
    });

    it("feeds a bus subscriber of one account its events only, live and replayed, and one of none every account's", async (ctx) => {
      const logs = logsFor(ctx);
      const bus = createEventBus({ log: await logs.open() });
      const of = async (options: Parameters<typeof bus.subscribe>[0]) => {
        const iterator = await bus.subscribe(options);
        const seen: string[] = [];
        void (async () => {
          for await (const logged of iterator) seen.push(named([logged])[0]!);
        })();
        return seen;
      };
      const [all, a, fallback] = await Promise.all([of({}), of({ account: 'acct-a' }), of({ account: '' })]);
      await bus.publish(event('x1', 'acct-a'), 'id');
      await bus.publish(event('x1', undefined), 'id');
      await bus.publish(event('x2', 'acct-b'), 'id');
      await bus.publish(event('x3', 'acct-a'), 'id');
      expect(await waitFor(() => all.length === 4 && a.length === 2 && fallback.length === 1)).toBe(true);
      expect(all).toEqual(['acct-a/x1', '/x1', 'acct-b/x2', 'acct-a/x3']);
      expect(a).toEqual(['acct-a/x1', 'acct-a/x3']);
      expect(fallback).toEqual(['/x1']);
      const resumedA = await of({ account: 'acct-a', after: 'x1' });
      const resumedB = await of({ account: 'acct-b', after: 'x2', transactionId: 'tx-1' });
      await bus.publish(event('x4', 'acct-b'), 'id');
      expect(await waitFor(() => resumedA.length === 1 && resumedB.length === 1)).toBe(true);
      expect(resumedA).toEqual(['acct-a/x3']);
      expect(resumedB).toEqual(['acct-b/x4']);
      await bus.close();
    });
  });

describe.concurrent("the Redis event log's keys per account", () => {
  it("keeps the default account's keys as before accounts and gives another account's its name", async (ctx) => {
    const logs = redisLogs(ctx);
    const log = await logs.open();
    await log.append(event('m1', undefined, 'tx-9'), 'id');
    await log.append(event('m1', 'acct-a', 'tx-9'), 'id');
    await log.append(event('gw_1', 'acct-b.x', 'tx-9'), 'content');
    const keys = (await inspect.keys(`${logs.prefix}*`)).map((key) => key.slice(logs.prefix.length)).sort();
    // Every key of the log in the slot of its `{events}` tag (redis-keys.ts), the instance's write probe too.
    expect(keys).toEqual([
      '{events}',
      '{events}:account-newest:position',
      '{events}:account-newest@acct-a:position',
      '{events}:account-newest@acct-b.x:position',
      '{events}:dedupe:m1',
      '{events}:dedupe@acct-a:m1',
      '{events}:event-position:m1',
      '{events}:event-position@acct-a:m1',
      '{events}:event-position@acct-b.x:gw_1',
      '{events}:last-digest:tx-9',
      '{events}:last-digest@acct-a:tx-9',
      '{events}:last-digest@acct-b.x:tx-9',
      '{events}:write-probe',
    ]);
  });

  it('carries the account to every instance, live, and in the stream the history reads', async (ctx) => {
    const logs = redisLogs(ctx);
    const [one, other] = [await logs.open(), await logs.open()];
    const heard: LoggedEvent[] = [];
    other.onAppend((logged) => heard.push(logged));
    await one.append(event('m1', 'acct-a'), 'id');
    await one.append(event('m2', undefined), 'id');
    expect(await waitFor(() => heard.length === 2)).toBe(true);
    expect(named(heard)).toEqual(['acct-a/m1', '/m2']);
    expect(heard.map(({ event: e }) => 'account' in e)).toEqual([true, false]);
    const queued = (await inspect.xrange(redisKeys(logs.prefix).stream, '-', '+')).map(
      ([, fields]) => JSON.parse(fields[1]!) as TransactionUpdateEvent,
    );
    expect(queued.map((e) => e.account)).toEqual(['acct-a', undefined]);
    // The other instance resumes after the account's id too.
    await one.append(event('m1', 'acct-b'), 'id');
    expect(named((await other.readAfter('m1', 'acct-a')).events)).toEqual(['/m2', 'acct-b/m1']);
  });

  it('drops a redelivery its own Redis forgot, per account, from what the instance remembers', async (ctx) => {
    const logs = redisLogs(ctx);
    const log = await logs.open();
    await log.append(event('m1', 'acct-a'), 'id');
    // Redis restarted without persistence: its keys are gone, the instance still knows acct-a's m1 (and only that).
    await inspect.del(redisKeys(logs.prefix).dedupe('m1', 'acct-a'));
    expect(await log.append(event('m1', 'acct-a'), 'id')).toBeUndefined();
    expect(await log.append(event('m1', 'acct-b'), 'id')).toBeDefined();
  });
});
