import { randomUUID } from 'node:crypto';
import { EventSource } from 'eventsource';
import { afterEach, describe, expect, it } from 'vitest';
import { buildWebhookRequest, type WebhookForm } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';

/*
 * The live path on one instance: what a sender's text may do to an
 * SSE stream, statuses that come back, and cursors the log no longer reaches.
 */

const started: RunningGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((running) => running.close()));
});

async function gateway(env: Record<string, string> = {}): Promise<RunningGateway> {
  const running = await startGateway(env);
  started.push(running);
  return running;
}

const line = { productId: 'p-1', productName: 'Cola', productPrice: 1.5, quantity: 2 };

async function post(
  running: RunningGateway,
  form: WebhookForm,
  transaction: { transactionId: string; status: string },
  id?: string,
): Promise<void> {
  const request = buildWebhookRequest({ form, transaction: { ...transaction, products: [line] }, id });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

const LIVE = 'subscription($after: ID) { transactionUpdated(after: $after) { eventId status } }';
const untilSubscribed = (running: RunningGateway, count: number) => waitFor(() => running.gateway.activeSubscriptions() === count);

/** An SSE frame is comment, id, event and data lines only, each free of carriage returns. */
const FRAME_LINE = /^(?::.*|id: [\w.:-]+|event: (?:next|complete)|data: .*)$/;

describe('SSE framing', () => {
  it('writes ids of its own into `id:` lines, whatever the sender put in its envelope id', async () => {
    const running = await gateway();
    const sse = await sseSubscribe(running.url, LIVE, TEST_KEY);
    expect(await untilSubscribed(running, 1)).toBe(true);
    const tx = `tx-${randomUUID()}`;
    const evil = 'evt_1\r\nid: forged\n\nevent: next\ndata: {"data":{"transactionUpdated":{"eventId":"x","status":"forged"}}}\n';
    await post(running, 'enveloped', { transactionId: tx, status: 'first' }, evil);
    await post(running, 'enveloped', { transactionId: tx, status: 'second' });

    // The sender's id stays available, as a field.
    expect((await sse.next()).data.transactionUpdated).toEqual({ eventId: evil, status: 'first' });
    expect((await sse.next()).data.transactionUpdated.status).toBe('second');
    const raw = sse.raw();
    expect(raw).not.toContain('\r');
    for (const frame of raw.split('\n\n').filter((text) => text !== '')) {
      for (const text of frame.split('\n')) expect(text).toMatch(FRAME_LINE);
    }
    const cursor = sse.lastEventId();
    expect(cursor).toMatch(/^[\w.:-]+$/);
    sse.close();

    // Whatever the stream wrote resumes it: as Last-Event-ID, and as `after`.
    await post(running, 'enveloped', { transactionId: tx, status: 'third' });
    const resumed = await sseSubscribe(running.url, LIVE, TEST_KEY, undefined, { 'last-event-id': cursor! });
    expect((await resumed.next()).data.transactionUpdated.status).toBe('third');
    resumed.close();
    const client = wsClient(running.url, TEST_KEY);
    const byCursor = subscribe(client, LIVE, { after: cursor });
    expect((await byCursor.next()).data!.transactionUpdated.status).toBe('third');
    // The sender's own id still works as `after`.
    const bySenderId = subscribe(client, LIVE, { after: evil });
    expect((await bySenderId.next()).data!.transactionUpdated.status).toBe('second');
    expect((await bySenderId.next()).data!.transactionUpdated.status).toBe('third');
    await client.dispose();
  });
});

describe('legacy webhooks without ids', () => {
  it('publishes a status that comes back (pending → completed → pending), and drops a redelivery of the last', async () => {
    const running = await gateway();
    const client = wsClient(running.url, TEST_KEY);
    const tx = `tx-${randomUUID()}`;
    const sub = subscribe(client, 'subscription($id: ID) { transactionUpdated(transactionId: $id) { eventId status } }', { id: tx });
    expect(await untilSubscribed(running, 1)).toBe(true);
    for (const status of ['pending', 'completed', 'pending', 'pending']) await post(running, 'legacy', { transactionId: tx, status });
    await post(running, 'legacy', { transactionId: tx, status: 'refunded' });
    const statuses = [];
    for (let n = 0; n < 4; n++) statuses.push((await sub.next()).data!.transactionUpdated.status);
    expect(statuses).toEqual(['pending', 'completed', 'pending', 'refunded']);
    // Each published event has an id of its own, so `after` any of them resumes exactly there.
    const ids = sub.received.map((result) => result.data!.transactionUpdated.eventId);
    expect(new Set(ids).size).toBe(4);
    const resumed = subscribe(client, 'subscription($after: ID) { transactionUpdated(after: $after) { status } }', { after: ids[0] });
    for (const status of ['completed', 'pending', 'refunded']) expect((await resumed.next()).data!.transactionUpdated.status).toBe(status);
    await client.dispose();
  });
});

describe('an expired cursor', () => {
  it('gets EVENTS_EXPIRED once over SSE, in a frame whose id resumes live on reconnect', async () => {
    const running = await gateway({ EVENT_LOG_SIZE: '2' });
    const first = await sseSubscribe(running.url, LIVE, TEST_KEY);
    expect(await untilSubscribed(running, 1)).toBe(true);
    await post(running, 'enveloped', { transactionId: 'tx-1', status: 's-1' });
    await first.next();
    const stale = first.lastEventId();
    first.close();
    for (let n = 2; n <= 5; n++) await post(running, 'enveloped', { transactionId: 'tx-1', status: `s-${n}` });

    const expired = await sseSubscribe(running.url, LIVE, TEST_KEY, undefined, { 'last-event-id': stale! });
    const error = await expired.next();
    expect(error.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual(['EVENTS_EXPIRED']);
    const resumeFrom = expired.lastEventId();
    expect(resumeFrom).toMatch(/^[\w.:-]+$/);
    expect(resumeFrom).not.toBe(stale);
    expired.close();

    // What an EventSource does next: reconnect with the id it was given.
    const again = await sseSubscribe(running.url, LIVE, TEST_KEY, undefined, { 'last-event-id': resumeFrom! });
    expect(await untilSubscribed(running, 1)).toBe(true);
    await post(running, 'enveloped', { transactionId: 'tx-1', status: 's-6' });
    expect((await again.next()).data.transactionUpdated.status).toBe('s-6');
    again.close();
  });

  it('does not loop an EventSource (the `eventsource` package, default settings) whose gateway restarted without its log', async () => {
    const first = await gateway();
    const proxy = await startTcpProxy(first.url);
    const source = new EventSource(`${proxy.url}/graphql?query=${encodeURIComponent('subscription { transactionUpdated { status } }')}`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: TEST_KEY } }),
    });
    const statuses: string[] = [];
    const errors: string[] = [];
    source.addEventListener('next', (message) => {
      const result = JSON.parse(message.data) as {
        data?: { transactionUpdated: { status: string } };
        errors?: Array<{ extensions: { code: string } }>;
      };
      if (result.data) statuses.push(result.data.transactionUpdated.status);
      for (const error of result.errors ?? []) errors.push(error.extensions.code);
    });
    try {
      expect(await untilSubscribed(first, 1)).toBe(true);
      await post(first, 'enveloped', { transactionId: 'tx-1', status: 'before' });
      expect(await waitFor(() => statuses.length === 1)).toBe(true);

      // A restart of the memory backend's gateway: the new one holds no log, so the stream's last id is unknown there.
      proxy.target(undefined);
      await first.close();
      const second = await gateway();
      proxy.target(second.url);
      expect(await waitFor(() => errors.length > 0, 10_000)).toBe(true);
      expect(await waitFor(() => second.gateway.activeSubscriptions() === 1, 10_000)).toBe(true);
      await post(second, 'enveloped', { transactionId: 'tx-1', status: 'after' });
      expect(await waitFor(() => statuses.length === 2, 5_000)).toBe(true);
      expect(statuses).toEqual(['before', 'after']);
      expect(errors).toEqual(['EVENTS_EXPIRED']);
    } finally {
      source.close();
      await proxy.close();
    }
  });
});

describe('a connection that carries its resume point', () => {
  const connected = (running: RunningGateway, params: Record<string, unknown>) =>
    createClient({
      url: `${running.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: TEST_KEY, ...params },
      retryAttempts: 0,
    });

  it('resumes every subscription without an after of its own after connectionParams.after; one with its own keeps it', async () => {
    const running = await gateway();
    const tx = `tx-${randomUUID()}`;
    for (const status of ['one', 'two', 'three']) await post(running, 'enveloped', { transactionId: tx, status }, `evt-${status}-${tx}`);

    const client = connected(running, { after: `evt-one-${tx}` });
    const first = subscribe(client, LIVE);
    const second = subscribe(client, 'subscription { transactionUpdated { status } }');
    const own = subscribe(client, LIVE, { after: `evt-two-${tx}` });
    expect((await first.next()).data!.transactionUpdated.status).toBe('two');
    expect((await first.next()).data!.transactionUpdated.status).toBe('three');
    expect((await second.next()).data!.transactionUpdated.status).toBe('two');
    expect((await second.next()).data!.transactionUpdated.status).toBe('three');
    expect((await own.next()).data!.transactionUpdated.status).toBe('three');
    await post(running, 'enveloped', { transactionId: tx, status: 'four' });
    for (const sub of [first, second, own]) expect((await sub.next()).data!.transactionUpdated.status).toBe('four');
    expect([first.received.length, second.received.length, own.received.length]).toEqual([3, 3, 2]);
    await client.dispose();
  });

  it("does not join a live subscriber's shared execution: it gets its replay", async () => {
    const running = await gateway();
    const tx = `tx-${randomUUID()}`;
    const live = connected(running, {});
    const liveSub = subscribe(live, 'subscription { transactionUpdated { status } }');
    expect(await untilSubscribed(running, 1)).toBe(true);
    for (const status of ['one', 'two']) await post(running, 'enveloped', { transactionId: tx, status }, `evt-${status}-${tx}`);
    expect((await liveSub.next()).data!.transactionUpdated.status).toBe('one');
    const resuming = connected(running, { after: `evt-one-${tx}` });
    const resumed = subscribe(resuming, 'subscription { transactionUpdated { status } }');
    expect((await resumed.next()).data!.transactionUpdated.status).toBe('two');
    await Promise.all([live.dispose(), resuming.dispose()]);
  });

  it('refuses a connectionParams.after that is not text with BAD_USER_INPUT, naming it', async () => {
    const running = await gateway();
    const client = connected(running, { after: { position: 1 } });
    const sub = subscribe(client, LIVE);
    const result = await sub.next();
    expect(result.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(result.errors?.[0]?.message).toContain('connectionParams.after');
    await client.dispose();
  });

  it(
    'Apollo Client comes back from EVENTS_EXPIRED as the recipe says: ' + 'the cursor of the error, a new connection, a new subscription',
    async () => {
      const running = await gateway({ EVENT_LOG_SIZE: '2' });
      await post(running, 'enveloped', { transactionId: 'tx-1', status: 's-1' }, 'evt-stale');
      for (let n = 2; n <= 5; n++) await post(running, 'enveloped', { transactionId: 'tx-1', status: `s-${n}` });

      let after: string | undefined = 'evt-stale';
      const resuming = createClient({
        url: `${running.url.replace(/^http/, 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: () => ({ Authorization: TEST_KEY, after }),
      });
      const apollo = new ApolloClient({ link: new GraphQLWsLink(resuming), cache: new InMemoryCache() });
      const statuses: string[] = [];
      const codes: unknown[] = [];
      const start = (): void => {
        let expiredAt: string | undefined;
        apollo.subscribe({ query: gql('subscription { transactionUpdated { eventId status } }') }).subscribe({
          next: (result) => {
            const update = (result.data as { transactionUpdated?: { eventId: string; status: string } } | undefined)?.transactionUpdated;
            if (update) {
              after = update.eventId;
              statuses.push(update.status);
              return;
            }
            const expired = (
              result.error as { errors?: Array<{ extensions?: { code?: unknown; cursor?: unknown } }> } | undefined
            )?.errors?.find((error) => error.extensions?.code === 'EVENTS_EXPIRED');
            codes.push(expired?.extensions?.code);
            if (typeof expired?.extensions?.cursor === 'string') expiredAt = expired.extensions.cursor;
          },
          // Once that subscription is over (Apollo shares one still running): reload what is shown (queries),
          // then a connection that carries the new cursor, then subscribe again.
          complete: () => {
            if (expiredAt === undefined) return;
            after = expiredAt;
            resuming.terminate();
            start();
          },
        });
      };
      start();
      expect(await waitFor(() => codes.length === 1 && running.gateway.activeSubscriptions() === 1, 10_000)).toBe(true);
      await post(running, 'enveloped', { transactionId: 'tx-1', status: 's-6' });
      expect(await waitFor(() => statuses.length === 1, 10_000)).toBe(true);
      expect([codes, statuses]).toEqual([['EVENTS_EXPIRED'], ['s-6']]);
      await resuming.dispose();
    },
  );
});
