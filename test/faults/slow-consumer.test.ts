import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * A subscriber that stops reading while events keep
 * coming. The gateway holds at most `maxUnsentBytes` of results for it, then
 * closes its WebSocket (1013) or cuts its SSE stream; the process stays small.
 * Before the fix, over WebSocket the 120 results (~96 MB) to one paused
 * consumer stayed held (+101 MiB of heap and buffers after GC, +130 MiB RSS)
 * and the connection stayed open; over SSE the stream waited for the client
 * and its events queued in the event bus, and the subscription never ended.
 */

const started: RunningGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((running) => running.close()));
});

const MIB = 1_048_576;
const EVENTS = 120;
// A 20 KB webhook becomes an ~800 KB result through 40 aliases: ~96 MB for the consumer in all, while
// the intake's own garbage stays small enough for the process's memory to show what is held for it.
const products = Array.from({ length: 50 }, (_, i) => ({
  productId: `p-${i}`,
  productName: `${i}-${'x'.repeat(380)}`,
  productPrice: 1.5,
  quantity: 1,
}));
const PRODUCT_ALIASES = Array.from({ length: 40 }, (_, i) => `p${i}: products { productId productName }`).join(' ');
const LIVE = `subscription { transactionUpdated { eventId status ${PRODUCT_ALIASES} } }`;
// Small logs: the log's own copies of the events are not what is measured.
const ENV = { EVENT_LOG_SIZE: '10' };
const start = () => startGateway(ENV, {}, (config) => ({ ...config, maxUnsentBytes: MIB }));

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** What live objects hold: the JavaScript heap and the buffers outside it (where unsent bytes are). */
const heldBytes = () => {
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
};

async function publish(running: RunningGateway, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const { body, headers } = buildWebhookRequest({
      form: 'enveloped',
      transaction: { transactionId: `tx-${randomUUID()}`, status: `s${i}`, products },
    });
    const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers, body });
    expect(response.status).toBe(200);
  }
}

/** Publishes while sampling the process's resident memory: its growth at the peak and once garbage is collected, in MiB. */
async function publishMeasuring(running: RunningGateway, count: number): Promise<{ peak: number; held: number }> {
  gc();
  const heldBefore = heldBytes();
  const before = process.memoryUsage().rss;
  let most = before;
  const sample = setInterval(() => (most = Math.max(most, process.memoryUsage().rss)), 20);
  try {
    await publish(running, count);
    await new Promise((resolve) => setTimeout(resolve, 300));
  } finally {
    clearInterval(sample);
  }
  gc();
  const after = process.memoryUsage().rss;
  const grew = { peak: (Math.max(most, after) - before) / MIB, rss: (after - before) / MIB, held: (heldBytes() - heldBefore) / MIB };
  return grew;
}

describe('a consumer that stops reading', () => {
  it('over WebSocket: is closed once its unsent results pass maxUnsentBytes, and the process stays small', async () => {
    const running = await start();
    started.push(running);
    const socket = new WebSocket(`${running.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    const received: string[] = [];
    socket.on('message', (data) => received.push(String(data).slice(0, 40)));
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: TEST_KEY } }));
    expect(await waitFor(() => received.some((text) => text.includes('connection_ack')))).toBe(true);
    socket.send(JSON.stringify({ id: 'live', type: 'subscribe', payload: { query: LIVE } }));
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);

    // Stops reading: the kernel's buffers fill, then the gateway's.
    (socket as unknown as { _socket: Socket })._socket.pause();
    const grewMiB = await publishMeasuring(running, EVENTS);

    expect(await waitFor(() => running.gateway.activeSubscriptions() === 0, 5_000)).toBe(true);
    expect(grewMiB.held).toBeLessThan(30);
    // Reading again, the client finds the close frame behind what it had been sent, or a dropped connection.
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    (socket as unknown as { _socket: Socket })._socket.resume();
    expect([1013, 1006]).toContain(await closed);
  });

  it('over SSE: has its stream cut once its unsent results pass maxUnsentBytes, and the process stays small', async () => {
    const running = await start();
    started.push(running);
    const { port } = new URL(running.url);
    const body = JSON.stringify({ query: LIVE });
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        path: '/graphql',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          authorization: TEST_KEY,
          'content-length': Buffer.byteLength(body),
        },
      });
      req.once('response', resolve).once('error', reject).end(body);
    });
    expect(response.statusCode).toBe(200);
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);
    let ended = false;
    response.once('close', () => (ended = true));
    response.on('error', () => {});

    // Stops reading.
    response.pause();
    response.socket.pause();
    const grewMiB = await publishMeasuring(running, EVENTS);

    expect(await waitFor(() => running.gateway.activeSubscriptions() === 0, 5_000)).toBe(true);
    expect(grewMiB.held).toBeLessThan(30);
    // The connection itself is closed (reset), not left open holding what the kernel buffered for it.
    const local = response.socket.localPort;
    const established = () =>
      execFileSync('ss', ['-Htn', 'state', 'established', `( sport = :${local} )`])
        .toString()
        .trim() !== '';
    expect(await waitFor(() => !established(), 5_000)).toBe(true);
    response.resume();
    response.socket.resume();
    expect(await waitFor(() => ended, 5_000)).toBe(true);
  });
});
