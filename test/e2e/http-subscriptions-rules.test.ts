import { randomUUID } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * Subscriptions over HTTP multipart, as a dashboard's page opens them with
 * Apollo Client's plain HttpLink (its defaults, and the page's Origin), are
 * held to the rules every other transport is: the key decides, an account
 * sees only its own events, a key without `subscribe` is refused, and a
 * stopping gateway ends the stream instead of leaving the page hanging.
 */

const KEY_A = 'multipart-a';
const KEY_B = 'multipart-b';
const READ_ONLY = 'multipart-read-only';
const API_KEYS = `${KEY_A}:read+subscribe@acct-a,${KEY_B}:read+subscribe@acct-b,${READ_ONLY}:read@acct-a`;

interface Watch {
  statuses: string[];
  failures: string[];
  ended: boolean;
  stop(): void;
}

/** An Apollo error in words: a refused request is a ServerError, whose message names the status and whose body holds the gateway's words. */
const wordsOf = (error: unknown): string => {
  const { bodyText } = error as { bodyText?: unknown };
  return [error instanceof Error ? error.message : String(error), typeof bodyText === 'string' ? bodyText : ''].join(' ');
};

/** Opens `transactionUpdated` through HttpLink with `key` (none: no Authorization), collecting what arrives. */
function watch(url: string, key: string | undefined, transactionId: string): Watch {
  const client = new ApolloClient({
    link: new HttpLink({
      uri: `${url}/graphql`,
      headers: { ...(key ? { authorization: key } : {}), origin: url },
    }),
    cache: new InMemoryCache(),
  });
  const seen: Watch = { statuses: [], failures: [], ended: false, stop: () => {} };
  const subscription = client
    .subscribe({ query: parse(`subscription { transactionUpdated(transactionId: "${transactionId}") { eventId status } }`) })
    .subscribe({
      next: (result) => {
        const update = (result.data as { transactionUpdated?: { status: string } } | undefined)?.transactionUpdated;
        if (update) seen.statuses.push(update.status);
        if (result.error) seen.failures.push(wordsOf(result.error));
      },
      error: (error: unknown) => {
        seen.failures.push(wordsOf(error));
        seen.ended = true;
      },
      complete: () => void (seen.ended = true),
    });
  seen.stop = () => subscription.unsubscribe();
  return seen;
}

async function post(url: string, account: string, transactionId: string, status: string): Promise<void> {
  const request = buildWebhookRequest({ form: 'enveloped', id: randomUUID(), transaction: { transactionId, status, products: [] } });
  const response = await fetch(`${url}/webhooks/${account}`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

const gauge = async (url: string) =>
  Number(/^vending_gateway_active_subscriptions (\d+)/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? NaN);

describe("subscriptions through Apollo Client's HttpLink, under the rules of every transport", () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off', API_KEYS });
  });
  afterAll(() => running?.close());

  it("shows each account its own events only, and refuses a missing key or one without 'subscribe'", async () => {
    const transactionId = `mp-${randomUUID().slice(0, 8)}`;
    const a = watch(running.url, KEY_A, transactionId);
    const b = watch(running.url, KEY_B, transactionId);
    try {
      expect(await waitFor(async () => (await gauge(running.url)) === 2, 10_000)).toBe(true);
      // The same transaction id on both accounts' paths: each key hears its own account's.
      await post(running.url, 'acct-b', transactionId, 'b-pending');
      await post(running.url, 'acct-a', transactionId, 'a-pending');
      await post(running.url, 'acct-a', transactionId, 'a-completed');
      expect(await waitFor(() => a.statuses.length >= 2 && b.statuses.length >= 1, 10_000)).toBe(true);
      expect(a.statuses).toEqual(['a-pending', 'a-completed']);
      expect(b.statuses).toEqual(['b-pending']);
      expect([...a.failures, ...b.failures]).toEqual([]);
    } finally {
      a.stop();
      b.stop();
    }
    for (const [key, refusal] of [
      [undefined, /Missing API key/],
      [READ_ONLY, /lacks the "subscribe" permission/],
      [READ_ONLY, /lacks the "subscribe" permission/],
    ] as const) {
      const refused = watch(running.url, key, transactionId);
      expect(await waitFor(() => refused.failures.length > 0 || refused.ended, 10_000)).toBe(true);
      expect(refused.statuses).toEqual([]);
      expect(refused.failures.join('\n')).toMatch(refusal);
      refused.stop();
    }
    expect(await waitFor(async () => (await gauge(running.url)) === 0, 10_000)).toBe(true);
  });

  it('ends an open stream when the gateway stops, in time for the page to subscribe again elsewhere', async () => {
    // Far longer than the test may take: a stream the drain did not end would hold close() past the test's timeout.
    const own = await startGateway({ SIMULATOR: 'off', API_KEYS }, {}, (config) => ({ ...config, shutdownTimeoutMs: 300_000 }));
    const open = watch(own.url, KEY_A, `mp-${randomUUID().slice(0, 8)}`);
    try {
      expect(await waitFor(async () => (await gauge(own.url)) === 1, 10_000)).toBe(true);
      await own.close();
      expect(await waitFor(() => open.ended, 10_000)).toBe(true);
    } finally {
      open.stop();
    }
  }, 60_000);
});
