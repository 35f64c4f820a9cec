import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { TEST_KEY } from '../helpers/gateway.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * The real process, as `npm start` runs it, stopped with SIGTERM in the middle
 * of a load: every request gets an answer (a client may only be refused a
 * new connection once the gateway stopped listening), every webhook answered
 * 200 reaches the subscribers, subscriptions then end the way clients
 * retry (no `complete`: graphql-ws close 1012 Service Restart, an SSE stream
 * that just ends), and the process exits 0 within its
 * deadline.
 */

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const errorCode = (error: unknown): string => {
  const cause = (error as { cause?: { code?: string; syscall?: string } }).cause;
  // A connection the kernel had completed but the gateway had not yet accepted when it stopped listening is
  // reset by the kernel: the client's connect fails (ECONNRESET on `connect`). No request went out on it,
  // so it is a refused connection, like ECONNREFUSED. A busy machine leaves more such connections waiting.
  if (cause?.code === 'ECONNRESET' && cause.syscall === 'connect') return 'ECONNREFUSED';
  return cause?.code ?? (error as Error).name;
};

describe('SIGTERM under load', () => {
  it('answers every request, loses no accepted webhook and exits 0', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: new URL('../..', import.meta.url),
      env: { ...process.env, PORT: String(port), API_KEYS: TEST_KEY, LOG_LEVEL: 'silent', RATE_LIMIT_PER_SECOND: '0' },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    for (let i = 0; i < 100; i++) {
      if (
        await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const client = wsClient(url, TEST_KEY);
    const ws = subscribe(client, 'subscription { transactionUpdated { eventId } }');
    const sse = await sseSubscribe(url, 'subscription { transactionUpdated { eventId } }', TEST_KEY);
    await new Promise((resolve) => setTimeout(resolve, 200));

    const accepted: string[] = [];
    const dropped: string[] = [];
    let answered = 0;
    let stopLoad = false;
    let counter = 0;
    /*
     * A client's send: a request reset before any answer is sent once more, as browsers do on a reused connection
     * and as the service does with a webhook it got no answer for (the same event id: dedupe keeps it once). The
     * gateway keeps idle connections open while it drains, then closes those still idle, and a client that was
     * slow to send its next request (a busy machine) can be writing on one at that moment: HTTP/1.1 gives a server
     * no way to tell it first. What fails a second time is dropped.
     */
    const send = async (path: string, init: RequestInit = {}): Promise<Response> => {
      try {
        return await fetch(`${url}${path}`, init);
      } catch (error) {
        if (errorCode(error) !== 'ECONNRESET') throw error;
        return fetch(`${url}${path}`, init);
      }
    };
    const loop = async (kind: 'rest' | 'webhook') => {
      while (!stopLoad) {
        try {
          if (kind === 'rest') {
            const response = await send('/vendings', { headers: { authorization: TEST_KEY } });
            await response.arrayBuffer();
            answered += 1;
          } else {
            const id = `load-${counter++}`;
            const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: 't', status: 's', products: [] }, id });
            const response = await send('/webhooks', { method: 'POST', headers: request.headers, body: request.body });
            await response.arrayBuffer();
            answered += 1;
            if (response.status === 200) accepted.push(id);
          }
        } catch (error) {
          const code = errorCode(error);
          // Refused: the gateway no longer listens. That is the load's end, not a dropped request.
          if (code === 'ECONNREFUSED') return;
          dropped.push(code);
          return;
        }
      }
    };
    const loops = [...Array.from({ length: 8 }, () => loop('rest')), ...Array.from({ length: 4 }, () => loop('webhook'))];
    // Under load when the signal comes: enough answered first, however long a busy machine takes to get there.
    for (const deadline = Date.now() + 20_000; (answered <= 50 || accepted.length <= 5) && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const stoppedAt = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    stopLoad = true;
    await Promise.all(loops);

    expect(code).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    expect(dropped).toEqual([]);
    expect(answered).toBeGreaterThan(50);
    expect(accepted.length).toBeGreaterThan(5);
    // Both subscribers got every accepted event, then an end that tells them to come back, not `complete`.
    // (This test's graphql-ws client does not retry, so it reports the close.)
    expect(await ws.ended).toMatchObject({ code: 1012 });
    const wsIds = ws.received.map((result) => (result.data as { transactionUpdated: { eventId: string } }).transactionUpdated.eventId);
    expect(new Set(wsIds)).toEqual(new Set(accepted));
    const sseIds: string[] = [];
    for (;;) {
      const next = await sse.next(500).catch(() => undefined);
      if (!next) break;
      sseIds.push(next.data.transactionUpdated.eventId);
    }
    expect(new Set(sseIds)).toEqual(new Set(accepted));
    expect(await sse.ended).toBe('end');
    await client.dispose();
  }, 20_000);
});
