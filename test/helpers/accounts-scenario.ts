import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { postGraphQL } from './graphql-client.js';
import { sseSubscribe, type SseSubscription } from './sse-client.js';
import { subscribe, wsClient, type QueuedSubscription } from './ws-client.js';

/*
 * Two accounts behind one gateway (or several instances of one): each sends
 * its webhooks to its own path, and a mixed batch arrives on the plain path.
 * Every key watches live over graphql-ws and SSE, then lists, counts and
 * reads; what it got is compared with what its account may read, and nothing
 * else may show. The series ends with a marker per account: events reach a
 * subscriber in log order, so once its marker is in, everything it was to
 * get before is in too.
 */

export const SUBSCRIPTION = 'subscription { transactionUpdated { transactionId status products { productName } } }';
const RECENT = 'query { recentTransactions(first: 100) { totalCount nodes { transactionId status history { status } } } }';
const STATS =
  'query($since: DateTime!) { transactionStats(since: $since, interval: DAY) { count topProductsByQuantity(first: 10) { productName } } }';
const ONE = 'query($id: ID!) { transaction(id: $id) { transactionId history { status } } }';

export interface AccountsWorld {
  /** Instance `n`'s base URL (n modulo the instances). */
  url(n: number): string;
  /** Called once the scenario's transactions are made, before any webhook: an upstream learns whose they are. */
  own?(transactionId: string, account: 'a' | 'b'): void;
  /** Resolves once the history holds what was posted (a history applied after the webhook's answer). */
  settle?(): Promise<void>;
}

export interface Watcher {
  key: string;
  ws: QueuedSubscription;
  sse: SseSubscription;
  close(): Promise<void>;
}

export interface Expected {
  /** Per key: the transactions it receives live, in order, markers included. */
  live: Record<string, string[]>;
  /** Per key: the transactions `recentTransactions` lists (any order) and whose they are, or the error code of lists and statistics. */
  listed: Record<string, { ids: string[]; products: string[] } | string>;
}

export interface Series {
  ids: { a1: string; a2: string; aPlain: string; aMarker: string; b1: string; bPlain: string; bMarker: string };
}

/** The scenario's transactions, each a new id, and the products that name their account (never to be seen by the other). */
export function accountsSeries(world: AccountsWorld): Series {
  const id = () => randomUUID();
  const ids = { a1: id(), a2: id(), aPlain: id(), aMarker: id(), b1: id(), bPlain: id(), bMarker: id() };
  for (const [name, value] of Object.entries(ids)) world.own?.(value, name.startsWith('a') ? 'a' : 'b');
  return { ids };
}

/** The product only account `account`'s transactions hold. */
export const secretOf = (account: 'a' | 'b'): string => `Secret product of ${account}`;
const product = (account: string) => [
  { productId: `p-${account}`, productName: `Secret product of ${account}`, productPrice: 1.5, quantity: 1 },
];

async function post(
  url: string,
  path: string,
  transactionId: string,
  status: string,
  account: string,
  form: 'legacy' | 'enveloped',
): Promise<void> {
  const request = buildWebhookRequest({ form, transaction: { transactionId, status, products: product(account) } });
  const response = await fetch(`${url}${path}`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status, `${path} ${transactionId}`).toBe(200);
}

export async function watch(url: string, key: string): Promise<Watcher> {
  const client = wsClient(url, key);
  const ws = subscribe(client, SUBSCRIPTION);
  const sse = await sseSubscribe(url, SUBSCRIPTION, key);
  expect(sse.status).toBe(200);
  return {
    key,
    ws,
    sse,
    async close() {
      ws.unsubscribe();
      sse.close();
      await client.dispose();
    },
  };
}

/** Posts the series: A's path, B's path, a mixed batch on the plain path, then each account's marker. */
export async function postSeries(
  world: AccountsWorld,
  { ids }: Series,
  paths = { a: '/webhooks/acct-a', b: '/webhooks/acct-b' },
): Promise<void> {
  await post(world.url(0), paths.a, ids.a1, 'pending', 'a', 'enveloped');
  await post(world.url(1), paths.b, ids.b1, 'pending', 'b', 'legacy');
  await post(world.url(0), paths.a, ids.a1, 'completed', 'a', 'legacy');
  await post(world.url(1), paths.a, ids.a2, 'pending', 'a', 'enveloped');
  // A service that sends several accounts' webhooks to one address.
  await post(world.url(0), '/webhooks', ids.aPlain, 'pending', 'a', 'enveloped');
  await post(world.url(1), '/webhooks', ids.bPlain, 'pending', 'b', 'legacy');
  await post(world.url(0), paths.a, ids.aMarker, 'completed', 'a', 'enveloped');
  await post(world.url(1), paths.b, ids.bMarker, 'completed', 'b', 'enveloped');
}

/** What a watcher received over each transport until `last` arrived (or a timeout). */
async function receivedUntil(watcher: Watcher, last: string | undefined): Promise<{ ws: string[]; sse: string[] }> {
  const read = async (next: (ms: number) => Promise<any>) => {
    const ids: string[] = [];
    if (last === undefined) {
      // Nothing is owed: whatever comes within a while is what leaked.
      for (;;) {
        try {
          ids.push((await next(1_500)).data.transactionUpdated.transactionId);
        } catch {
          return ids;
        }
      }
    }
    while (ids.at(-1) !== last) ids.push((await next(10_000)).data.transactionUpdated.transactionId);
    return ids;
  };
  return { ws: await read((ms) => watcher.ws.next(ms)), sse: await read((ms) => watcher.sse.next(ms)) };
}

const RESUMED = 'subscription($after: ID) { transactionUpdated(after: $after) { transactionId } }';

/** What a key gets when it resumes `after` a position of the log: the replay, then live events, until `last` (or a while). */
async function resumed(url: string, key: string, after: string, last: string | undefined): Promise<string[]> {
  const client = wsClient(url, key);
  const sub = subscribe(client, RESUMED, { after });
  try {
    const ids: string[] = [];
    for (;;) {
      let next;
      try {
        next = await sub.next(last === undefined ? 1_500 : 10_000);
      } catch (error) {
        if (last === undefined) return ids;
        throw error;
      }
      expect(next.errors, `${key} resumes`).toBeUndefined();
      ids.push(next.data?.transactionUpdated.transactionId);
      if (ids.at(-1) === last) return ids;
    }
  } finally {
    sub.unsubscribe();
    await client.dispose();
  }
}

/** Checks each watcher's live events, each key's replay from the series' first event, then each key's list, count, statistics and reads. */
export async function checkAccounts(world: AccountsWorld, watchers: Watcher[], series: Series, expected: Expected): Promise<void> {
  for (const watcher of watchers) {
    const owed = expected.live[watcher.key] ?? [];
    const got = await receivedUntil(watcher, owed.at(-1));
    expect(got.ws, `${watcher.key} over graphql-ws`).toEqual(owed);
    expect(got.sse, `${watcher.key} over SSE`).toEqual(owed);
  }
  // The position of the series' first event (A's first webhook), as the first watcher's SSE stream wrote it.
  const first = /^id: ?(.+)$/m.exec(watchers[0]!.sse.raw())?.[1];
  expect(first, 'the first SSE frame has an id').toBeDefined();
  for (const watcher of watchers) {
    const owed = expected.live[watcher.key] ?? [];
    const replayed = owed[0] === series.ids.a1 ? owed.slice(1) : owed;
    expect(await resumed(world.url(1), watcher.key, first!, replayed.at(-1)), `${watcher.key} resumed after the first event`).toEqual(
      replayed,
    );
  }
  const all = Object.values(series.ids);
  await world.settle?.();
  for (const [key, listed] of Object.entries(expected.listed)) {
    for (const n of [0, 1]) {
      const recent = await postGraphQL(world.url(n), RECENT, { key });
      const stats = await postGraphQL(world.url(n), STATS, { key, variables: { since: new Date(Date.now() - 86_400_000).toISOString() } });
      if (typeof listed === 'string') {
        expect(recent.body.errors?.[0]?.extensions?.code, `${key} lists`).toBe(listed);
        expect(stats.body.errors?.[0]?.extensions?.code, `${key} counts`).toBe(listed);
        expect(JSON.stringify([recent.body, stats.body])).not.toMatch(/Secret product/);
        continue;
      }
      const ids = recent.body.data?.recentTransactions.nodes.map((node: { transactionId: string }) => node.transactionId) ?? [];
      expect(recent.body.errors, `${key} lists`).toBeUndefined();
      expect(new Set(ids), `${key} lists on instance ${n}`).toEqual(new Set(listed.ids));
      expect(recent.body.data?.recentTransactions.totalCount).toBe(listed.ids.length);
      expect(stats.body.errors, `${key} counts`).toBeUndefined();
      const sold = stats.body.data?.transactionStats.topProductsByQuantity.map((p: { productName: string }) => p.productName) ?? [];
      expect(new Set(sold), `${key}'s top products`).toEqual(new Set(listed.products));
      expect(stats.body.data?.transactionStats.count).toBe(listed.ids.length);
    }
  }
  // A transaction of A read with B's key: the service says no, and the gateway shows nothing of its own either.
  for (const watcher of watchers) {
    const readable = new Set(expected.live[watcher.key] ?? []);
    for (const id of all) {
      if (readable.has(id)) continue;
      const one = await postGraphQL(world.url(0), ONE, { variables: { id }, key: watcher.key });
      expect(JSON.stringify(one.body), `${watcher.key} reads ${id}`).not.toMatch(/"history":\[\{/);
    }
  }
}
