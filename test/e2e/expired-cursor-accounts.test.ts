import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * EVENTS_EXPIRED's `extensions.cursor` tells a key where to resume. Positions
 * are the log's, shared by every account: a cursor that was the log's newest
 * told a key of account A when any account last received an event. What A is
 * told depends on A's own events only, in every log alike, and resuming from
 * it misses nothing of A's.
 */

const KEY_A = 'key-of-a';
const KEY_B = 'key-of-b';
const API_KEYS = `${KEY_A}:read+subscribe@acct-a,${KEY_B}:read+subscribe@acct-b`;
const SUBSCRIPTION = 'subscription($after: ID) { transactionUpdated(after: $after) { transactionId status } }';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function postTo(url: string, account: string, status: string): Promise<string> {
  const transactionId = `${account}-${randomUUID().slice(0, 8)}`;
  const request = buildWebhookRequest({
    form: 'enveloped',
    id: `evt-${randomUUID()}`,
    transaction: { transactionId, status, products: [] },
  });
  const response = await fetch(`${url}/webhooks/${account}`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
  return transactionId;
}

/** The cursor an EVENTS_EXPIRED answer gives `key` for an `after` the log never held. */
async function expiredCursor(url: string, key: string): Promise<string> {
  const client = wsClient(url, key);
  try {
    const sub = subscribe(client, SUBSCRIPTION, { after: `never-seen-${randomUUID()}` });
    const result = await sub.next(5_000);
    const error = result.errors?.[0] as { extensions?: { code?: string; cursor?: string } } | undefined;
    expect(error?.extensions?.code).toBe('EVENTS_EXPIRED');
    expect(typeof error?.extensions?.cursor).toBe('string');
    return error!.extensions!.cursor!;
  } finally {
    await client.dispose();
  }
}

type Deployment = { name: string; start(): Promise<Record<string, string>> };
const DEPLOYMENTS: Deployment[] = [
  { name: 'in process', start: async () => ({}) },
  {
    name: 'Redis',
    start: async () => {
      const redis: TestRedis = await startTestRedis();
      cleanups.push(() => redis.close());
      return { REDIS_URL: redis.url, REDIS_PREFIX: `expired-${randomUUID()}:` };
    },
  },
  {
    name: 'PostgreSQL',
    start: async () => {
      const database: TestDatabase = await testDatabase();
      cleanups.push(() => database.drop());
      return { DATABASE_URL: database.url };
    },
  },
];

describe.each(DEPLOYMENTS)('the cursor of EVENTS_EXPIRED ($name)', ({ start }) => {
  it("depends on the key's own account only, and resumes with nothing of it lost", async () => {
    const running: RunningGateway = await startGateway({ SIMULATOR: 'off', API_KEYS, ...(await start()) });
    cleanups.push(() => running.close());
    const { url } = running;

    await postTo(url, 'acct-a', 'a-before');
    const told = await expiredCursor(url, KEY_A);
    // Account B's events are none of A's business: A is told the same.
    await postTo(url, 'acct-b', 'b-1');
    await postTo(url, 'acct-b', 'b-2');
    expect(await expiredCursor(url, KEY_A)).toBe(told);
    // A key of B is told of B's events, not of A's.
    expect(await expiredCursor(url, KEY_B)).not.toBe(told);

    // Resuming after the cursor: what A got since (and nothing of B's), then live.
    const missed = await postTo(url, 'acct-a', 'a-while-away');
    await postTo(url, 'acct-b', 'b-while-away');
    const client = wsClient(url, KEY_A);
    cleanups.push(async () => client.dispose());
    const resumed = subscribe(client, SUBSCRIPTION, { after: told });
    expect((await resumed.next(5_000)).data).toEqual({ transactionUpdated: { transactionId: missed, status: 'a-while-away' } });
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1, 5_000)).toBe(true);
    await postTo(url, 'acct-b', 'b-live');
    const live = await postTo(url, 'acct-a', 'a-live');
    expect((await resumed.next(5_000)).data).toEqual({ transactionUpdated: { transactionId: live, status: 'a-live' } });
    expect(resumed.received).toHaveLength(2);
  }, 30_000);

  it('is one a key of an account without events resumes from, live', async () => {
    const running: RunningGateway = await startGateway({ SIMULATOR: 'off', API_KEYS, ...(await start()) });
    cleanups.push(() => running.close());
    const { url } = running;

    await postTo(url, 'acct-b', 'b-1');
    const told = await expiredCursor(url, KEY_A);
    await postTo(url, 'acct-b', 'b-2');
    expect(await expiredCursor(url, KEY_A)).toBe(told);

    const client = wsClient(url, KEY_A);
    cleanups.push(async () => client.dispose());
    const resumed = subscribe(client, SUBSCRIPTION, { after: told });
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1, 5_000)).toBe(true);
    await postTo(url, 'acct-b', 'b-live');
    const live = await postTo(url, 'acct-a', 'a-live');
    expect((await resumed.next(5_000)).data).toEqual({ transactionUpdated: { transactionId: live, status: 'a-live' } });
    expect(resumed.received).toHaveLength(1);
  }, 30_000);
});
