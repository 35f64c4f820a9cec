import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createUpstreamClient, type UpstreamClient } from '../../src/backends/rest/upstream-client.js';
import { ConnectedCaller } from '../../src/backends/caller.js';
import { ClientGone } from '../../src/errors.js';

/*
 * The upstream client alone against a scripted server: each request takes the
 * next step of the script, so a test says exactly what each attempt meets and
 * counts the requests that arrived. Pins the retry contract: which failures are
 * retried, that a PUT never is, the attempts reported, and what a connection
 * lost in the middle of an answer's body does.
 */
type Step = 'ok' | '503' | '500' | '404' | 'reset' | 'hang' | 'mid-body' | 'slow';
interface Seen {
  method: string;
  url: string;
  range: string | undefined;
}

let server: Server;
let url: string;
let script: Step[] = [];
const seen: Seen[] = [];
const sockets = new Set<Socket>();

const answer = (status: number, body: string) => ({
  status,
  body,
  headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
});
const answers = {
  ok: answer(200, '{"data":{"ok":true}}'),
  '503': answer(503, '{"errors":{"message":"busy"}}'),
  '500': answer(500, '{"errors":{"message":"broken"}}'),
  '404': answer(404, '{"errors":{"message":"no such thing"}}'),
};

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', range: req.headers.range });
      const step = script.shift() ?? 'ok';
      if (step === 'reset') return void req.socket.destroy();
      if (step === 'hang') return;
      if (step === 'slow') return void setTimeout(() => res.writeHead(200, answers.ok.headers).end(answers.ok.body), 150);
      if (step === 'mid-body') {
        // The head and part of the body, then the connection is gone.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': 100 });
        res.write('{"data":', () => setTimeout(() => req.socket.destroy(), 20));
        return;
      }
      const { status, headers, body } = answers[step];
      res.writeHead(status, headers).end(body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  script = [];
  seen.length = 0;
});

const clients: UpstreamClient[] = [];
afterAll(() => Promise.all(clients.map((client) => client.close())));
function client(retries = 2, timeoutMs = 1_000): UpstreamClient {
  const made = createUpstreamClient({ url, timeoutMs, connections: 4, retries, retryBaseMs: 1 });
  clients.push(made);
  return made;
}

const get = (c: UpstreamClient) => c.send({ method: 'GET', path: '/things/1', authorization: 'key' });
const put = (c: UpstreamClient) => c.send({ method: 'PUT', path: '/things/1/payment', authorization: 'key', body: '{"paid":true}' });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('retries of a GET', () => {
  it('retries after a 503 and after a reset connection, and reports every attempt', async () => {
    script = ['503', 'reset', 'ok'];
    const response = await get(client());
    expect(response).toMatchObject({ status: 200, text: '{"data":{"ok":true}}', contentType: 'application/json', attempts: 3 });
    expect(seen.map((s) => s.url)).toEqual(['/api/things/1', '/api/things/1', '/api/things/1']);
  });

  it('answers with the last 503 and its body once the retries run out', async () => {
    script = ['503', '503', '503', 'ok'];
    const response = await get(client());
    expect(response).toMatchObject({ status: 503, text: '{"errors":{"message":"busy"}}', attempts: 3 });
    expect(seen).toHaveLength(3);
  });

  it('fails as UPSTREAM_UNAVAILABLE after three resets', async () => {
    script = ['reset', 'reset', 'reset', 'ok'];
    expect(await failure(get(client()))).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(seen).toHaveLength(3);
  });

  it('makes one attempt with retries: 0', async () => {
    script = ['503', 'ok'];
    expect(await get(client(0))).toMatchObject({ status: 503, attempts: 1 });
    expect(seen).toHaveLength(1);
  });

  it.each([
    ['500', 500],
    ['404', 404],
  ] as const)('does not retry a %s', async (step, status) => {
    script = [step, 'ok'];
    expect(await get(client())).toMatchObject({ status, attempts: 1 });
    expect(seen).toHaveLength(1);
  });

  it('does not retry a timeout', async () => {
    script = ['hang', 'ok'];
    expect(await failure(get(client(2, 150)))).toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    expect(seen).toHaveLength(1);
  });

  it('sends a GET again, whole, when its body was cut off: the contract offers no Range requests to resume it', async () => {
    script = ['mid-body', 'ok'];
    expect(await get(client())).toMatchObject({ status: 200, attempts: 2 });
    expect(seen).toEqual([
      { method: 'GET', url: '/api/things/1', range: undefined },
      { method: 'GET', url: '/api/things/1', range: undefined },
    ]);
  });
});

describe('a PUT', () => {
  it('is never retried, neither after a 503 nor after a reset', async () => {
    const c = client();
    script = ['503', 'ok'];
    expect(await put(c)).toMatchObject({ status: 503, attempts: 1 });
    script = ['reset', 'ok'];
    expect(await failure(put(c))).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(seen.map((s) => s.method)).toEqual(['PUT', 'PUT']);
  });
});

describe('a call whose client leaves', () => {
  it('fails at once while queued for a connection, and its request is never sent', async () => {
    const single = createUpstreamClient({ url, timeoutMs: 2_000, connections: 1, retries: 0 });
    clients.push(single);
    script = ['slow', 'ok'];
    const first = get(single);
    const caller = new ConnectedCaller();
    const queued = failure(single.send({ method: 'GET', path: '/things/2', authorization: 'key', caller }));
    caller.markLeft();
    expect(await queued).toBeInstanceOf(ClientGone);
    expect((await first).status).toBe(200);
    // The connection is free again: a request still queued behind the first would have arrived by now.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen.map((s) => s.url)).toEqual(['/api/things/1']);
  });
});
