import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * `subscribe` messages written in one burst on one socket,
 * before any is answered. The count of a connection's subscriptions is taken
 * when each message arrives, so the bound holds however they are packed.
 * (Before the fix, 150 subscribes in one burst against a bound of 100 ran all 150.)
 */

const started: RunningGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((running) => running.close()));
});

const LIVE = 'subscription { transactionUpdated { eventId } }';

interface Message {
  id?: string;
  type: string;
  payload?: unknown;
}

async function acknowledged(url: string): Promise<{ socket: WebSocket; messages: Message[] }> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
  const messages: Message[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data)) as Message));
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: TEST_KEY } }));
  expect(await waitFor(() => messages.some((message) => message.type === 'connection_ack'))).toBe(true);
  return { socket, messages };
}

/** Writes every subscribe before reading anything: ws corks frames sent in one tick into few TCP writes. */
function burst(socket: WebSocket, ids: string[]): void {
  for (const id of ids) socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query: LIVE } }));
}

const errored = (messages: Message[]) => messages.filter((message) => message.type === 'error').map((message) => message.id);

describe('the bound on subscriptions per connection under a burst of subscribes', () => {
  it('runs at most the bound, answers each one past it with an `error`, and frees slots on complete', async () => {
    const running = await startGateway({});
    started.push(running);
    const { socket, messages } = await acknowledged(running.url);
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, running.gateway.activeSubscriptions())), 1);

    burst(
      socket,
      Array.from({ length: 150 }, (_, i) => `s${i}`),
    );
    expect(await waitFor(() => errored(messages).length + running.gateway.activeSubscriptions() >= 150, 5_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    clearInterval(watch);
    most = Math.max(most, running.gateway.activeSubscriptions());

    expect(running.gateway.activeSubscriptions()).toBe(100);
    expect(most).toBe(100);
    const refused = errored(messages);
    expect(refused).toHaveLength(50);
    // The first hundred arrived first and hold the slots.
    expect(refused).toEqual(Array.from({ length: 50 }, (_, i) => `s${i + 100}`));
    const refusal = messages.find((message) => message.type === 'error')!.payload as Array<{
      message: string;
      extensions: { code: string };
    }>;
    expect(refusal[0]).toMatchObject({ message: 'At most 100 subscriptions per connection', extensions: { code: 'BAD_USER_INPUT' } });
    expect(socket.readyState).toBe(WebSocket.OPEN);

    // Completing ten frees ten slots, and only ten: a second burst of twenty gets ten more errors.
    for (let i = 0; i < 10; i++) socket.send(JSON.stringify({ id: `s${i}`, type: 'complete' }));
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 90)).toBe(true);
    burst(
      socket,
      Array.from({ length: 20 }, (_, i) => `t${i}`),
    );
    expect(await waitFor(() => errored(messages).length === 60 && running.gateway.activeSubscriptions() === 100, 5_000)).toBe(true);
    expect(errored(messages).slice(50)).toEqual(Array.from({ length: 10 }, (_, i) => `t${i + 10}`));
    socket.close();
  });

  it('counts a subscribe that was refused for its document as no slot', async () => {
    const running = await startGateway({}, {}, (config) => ({ ...config, websocket: { ...config.websocket, maxSubscriptions: 3 } }));
    started.push(running);
    const { socket, messages } = await acknowledged(running.url);
    for (let i = 0; i < 5; i++)
      socket.send(JSON.stringify({ id: `bad${i}`, type: 'subscribe', payload: { query: 'subscription { nope }' } }));
    // (A refused one holds its slot only until it is answered.)
    expect(await waitFor(() => errored(messages).length === 5)).toBe(true);
    burst(socket, ['a', 'b', 'c', 'd']);
    expect(await waitFor(() => errored(messages).length === 6, 5_000)).toBe(true);
    expect(errored(messages).slice(5)).toEqual(['d']);
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 3)).toBe(true);
    socket.close();
  });
});
