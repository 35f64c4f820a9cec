import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TEST_KEY, pollVendingsEvery, startForwardGateway, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * `vendingUpdated` in front of a REST service that sends no webhook for
 * vendings: the gateway reads `GET /vendings` with its own key every
 * VENDING_POLL_MS and publishes each machine whose status, online, enabled or
 * products changed, over graphql-ws and SSE (with resume), to its account
 * only; one reader for all the instances sharing a Redis; none in forward mode.
 */

const UPSTREAM_KEY = 'gateway-own-key';
const QUERY =
  'subscription($vendingId: ID, $after: ID) { vendingUpdated(vendingId: $vendingId, after: $after) ' +
  '{ eventId vendingId changed status online enabled offlineSince vending { identifier } } }';
/** How often the machines are read here: faster than VENDING_POLL_MS allows, through `pollVendingsEvery`. */
const POLL = '100';
const fastPoll = pollVendingsEvery(Number(POLL));

let upstream: StandInUpstream;
const started: RunningGateway[] = [];
const vendingGetsBy = (key: string) =>
  upstream.requestHeaders.filter(
    (request) => request.method === 'GET' && request.path.startsWith('/vendings') && request.headers.authorization === key,
  ).length;

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [UPSTREAM_KEY, 'second-gateway-key'] });
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((gateway) => gateway.close()));
});
afterAll(() => upstream.close());

const serviceGateway = async (env: Record<string, string> = {}) => {
  const gateway = await startGateway(
    {
      BACKEND: 'rest',
      UPSTREAM_URL: upstream.url,
      UPSTREAM_API_KEY: UPSTREAM_KEY,
      API_KEYS: `${TEST_KEY},other-account-key:read+subscribe@elsewhere`,
      VENDING_POLL_MS: '1000',
      ...env,
    },
    {},
    fastPoll,
  );
  started.push(gateway);
  return gateway;
};

describe('vendingUpdated over the REST backend', () => {
  it('publishes a machine taken offline at the service, with what changed and since when, over graphql-ws and SSE', async () => {
    const gateway = await serviceGateway();
    const machine = upstream.vendings[0]!;
    machine.online = true;
    // The first read of every machine is the gateway's starting point: wait for it, then subscribe.
    expect(await waitFor(() => vendingGetsBy(UPSTREAM_KEY) >= 2, 5_000)).toBe(true);
    const client = wsClient(gateway.url, TEST_KEY);
    const live = subscribe(client, QUERY, { vendingId: machine.vendingId });
    const sse = await sseSubscribe(gateway.url, QUERY, TEST_KEY, {});
    expect(await waitFor(() => gateway.gateway.activeSubscriptions() >= 2)).toBe(true);
    const before = Date.now();
    machine.online = false;

    const { data } = await live.next(5_000);
    expect(data!.vendingUpdated).toMatchObject({
      vendingId: machine.vendingId,
      changed: ['online'],
      online: false,
      status: machine.status,
      enabled: machine.enabled,
      vending: { identifier: machine.identifier },
    });
    const since = new Date(data!.vendingUpdated.offlineSince).getTime();
    expect(since).toBeGreaterThanOrEqual(before - 5);
    expect(since).toBeLessThanOrEqual(Date.now());
    const overSse = await sse.next(5_000);
    expect(overSse.data.vendingUpdated.eventId).toBe(data!.vendingUpdated.eventId);
    // Where an EventSource would resume: the `id:` of that first frame (a position in the machines' log).
    const position = sse.lastEventId();
    expect(position).toMatch(/^\d+-\d+$/);
    // The machines' list says since when too.
    const fleet = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: TEST_KEY },
      body: JSON.stringify({ query: '{ vendings { nodes { vendingId online offlineSince } } }' }),
    }).then(
      (response) =>
        response.json() as Promise<{
          data: { vendings: { nodes: Array<{ vendingId: string; online: boolean; offlineSince: string | null }> } };
        }>,
    );
    expect(fleet.data.vendings.nodes.find((node) => node.vendingId === machine.vendingId)).toEqual({
      vendingId: machine.vendingId,
      online: false,
      offlineSince: data!.vendingUpdated.offlineSince,
    });

    // Back online and disabled in one read: one event naming both; nothing more while nothing changes.
    machine.online = true;
    machine.enabled = false;
    const { data: next } = await live.next(5_000);
    expect(next!.vendingUpdated).toMatchObject({ changed: ['online', 'enabled'], online: true, enabled: false, offlineSince: null });
    const polls = vendingGetsBy(UPSTREAM_KEY);
    expect(await waitFor(() => vendingGetsBy(UPSTREAM_KEY) >= polls + 3, 5_000)).toBe(true);
    expect(live.received).toHaveLength(2);

    // A subscriber that lost its connection resumes after the last change it saw.
    const resumed = await sseSubscribe(gateway.url, QUERY, TEST_KEY, { after: data!.vendingUpdated.eventId });
    expect((await resumed.next(5_000)).data.vendingUpdated.eventId).toBe(next!.vendingUpdated.eventId);
    // An EventSource's own reconnection: the Last-Event-ID of the first stream's first event.
    const reconnected = await sseSubscribe(gateway.url, QUERY, TEST_KEY, {}, { 'last-event-id': position! });
    expect((await reconnected.next(5_000)).data.vendingUpdated.eventId).toBe(next!.vendingUpdated.eventId);
    reconnected.close();
    machine.enabled = true;
    sse.close();
    resumed.close();
    live.unsubscribe();
    await client.dispose();
  });

  it("shows nothing of its account's machines to a key of another account", async () => {
    const gateway = await serviceGateway();
    const machine = upstream.vendings[1]!;
    expect(await waitFor(() => vendingGetsBy(UPSTREAM_KEY) >= 2, 5_000)).toBe(true);
    const own = wsClient(gateway.url, TEST_KEY);
    const other = wsClient(gateway.url, 'other-account-key');
    const mine = subscribe(own, QUERY, {});
    const theirs = subscribe(other, QUERY, {});
    expect(await waitFor(() => gateway.gateway.activeSubscriptions() >= 2)).toBe(true);
    machine.status = 'maintenance-test';
    expect((await mine.next(5_000)).data!.vendingUpdated.status).toBe('maintenance-test');
    await expect(theirs.next(500)).rejects.toThrow();
    machine.status = 'active';
    await Promise.all([own.dispose(), other.dispose()]);
  });

  it('reads nothing in forward mode, which has no key of its own', async () => {
    const gets = upstream.callsTo('GET', '/vendings').length;
    const gateway = await startForwardGateway(upstream.url, { VENDING_POLL_MS: '1000' }, {}, fastPoll);
    started.push(gateway);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(upstream.callsTo('GET', '/vendings').length).toBe(gets);
  });
});

describe('vendingUpdated on instances sharing a Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(() => redis.close());

  it(
    'reads the service from one instance at a time, delivers each change once on every instance, ' + 'and another takes over when it stops',
    async () => {
      const prefix = `vendings-${randomUUID()}:`;
      // Each instance with its own key for the service, so that the reads say which instance made them.
      const instance = async (key: string) => {
        const gateway = await startGateway(
          {
            BACKEND: 'rest',
            UPSTREAM_URL: upstream.url,
            UPSTREAM_API_KEY: key,
            API_KEYS: TEST_KEY,
            VENDING_POLL_MS: '1000',
            REDIS_URL: redis.url,
            REDIS_PREFIX: prefix,
          },
          {},
          fastPoll,
        );
        started.push(gateway);
        return gateway;
      };
      const [a, b] = [await instance(UPSTREAM_KEY), await instance('second-gateway-key')];
      const [byA, byB] = [vendingGetsBy(UPSTREAM_KEY), vendingGetsBy('second-gateway-key')];
      // Ten rounds' time: the reads all come from the instance that holds the lease.
      await new Promise((resolve) => setTimeout(resolve, 10 * Number(POLL)));
      const reads = [vendingGetsBy(UPSTREAM_KEY) - byA, vendingGetsBy('second-gateway-key') - byB];
      expect(reads.filter((count) => count > 0)).toHaveLength(1);
      const [holder, other] = reads[0]! > 0 ? [a, b] : [b, a];

      const clients = [wsClient(a.url, TEST_KEY), wsClient(b.url, TEST_KEY)];
      const subs = clients.map((client) => subscribe(client, QUERY, {}));
      expect(await waitFor(() => a.gateway.activeSubscriptions() >= 1 && b.gateway.activeSubscriptions() >= 1, 5_000)).toBe(true);
      const machine = upstream.vendings[2]!;
      machine.online = !machine.online;
      const events = await Promise.all(subs.map((sub) => sub.next(5_000)));
      expect(events[0]!.data!.vendingUpdated.eventId).toBe(events[1]!.data!.vendingUpdated.eventId);

      // The holder stops (its lease goes with it): the other instance reads the service from now on.
      await holder.close();
      started.splice(started.indexOf(holder), 1);
      const otherKey = other === a ? UPSTREAM_KEY : 'second-gateway-key';
      const before = vendingGetsBy(otherKey);
      expect(await waitFor(() => vendingGetsBy(otherKey) > before + 1, 5_000)).toBe(true);
      const remaining = subs[other === a ? 0 : 1]!;
      machine.online = !machine.online;
      const change = (await remaining.next(5_000)).data!.vendingUpdated;
      expect(change).toMatchObject({ vendingId: machine.vendingId, online: machine.online });
      // Nothing delivered twice across the hand-over.
      expect(new Set(remaining.received.map((result) => result.data!.vendingUpdated.eventId)).size).toBe(remaining.received.length);
      await Promise.all(clients.map(async (client) => client.dispose()));
    },
  );
});
