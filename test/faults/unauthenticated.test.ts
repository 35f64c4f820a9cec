import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * The unauthenticated pay nothing: a request without a
 * valid key is refused before its document is parsed, validated or costed,
 * on every path to /graphql, and it never makes a metric series, whatever
 * operation names or documents it carries.
 */

/** Every series of the gateway's own metrics (`name{labels}`), without values. */
async function seriesOf(url: string): Promise<Set<string>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return new Set(
    text
      .split('\n')
      .filter((line) => line.startsWith('vending_gateway_'))
      .map((line) => line.slice(0, line.lastIndexOf(' '))),
  );
}

const ATTEMPTS = 40;
/** A document that would fail validation, so an answer naming it shows that it was read. */
const invalid = (i: number) => `query Probe${i} { nope${i} }`;
const graphqlBody = (i: number) => JSON.stringify({ query: invalid(i), operationName: `Probe${i}` });
const graphqlQuery = (i: number) => `query=${encodeURIComponent(invalid(i))}&operationName=Probe${i}`;

interface Refusal {
  status: number;
  text: string;
}

/** Each way of asking /graphql without a valid key, for the i-th attempt. */
const paths: Record<string, (url: string, i: number) => Promise<Refusal>> = {
  'POST, no key': (url, i) =>
    fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: graphqlBody(i) }).then(refusal),
  'POST, unknown key': (url, i) =>
    fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `nope-${i}` },
      body: graphqlBody(i),
    }).then(refusal),
  'POST from a browser origin': (url, i) =>
    fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: graphqlBody(i),
    }).then(refusal),
  GET: (url, i) =>
    fetch(`${url}/graphql?${graphqlQuery(i)}`, { headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' } }).then(refusal),
  'GET that also accepts HTML': (url, i) =>
    fetch(`${url}/graphql?${graphqlQuery(i)}`, {
      headers: { accept: 'application/json, text/html;q=0.1', 'x-graphql-yoga-csrf': '1' },
    }).then(refusal),
  SSE: (url, i) =>
    fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: graphqlBody(i),
    }).then(refusal),
};

async function refusal(response: Response): Promise<Refusal> {
  return { status: response.status, text: await response.text() };
}

/** A graphql-ws client with an unknown key that sends `subscribe`s at once: what it got back, and how it was closed. */
async function webSocketAttempt(url: string, i: number): Promise<{ messages: string[]; code: number }> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
  const messages: string[] = [];
  socket.on('message', (data) => messages.push(String(data)));
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `nope-${i}` } }));
  for (let n = 0; n < 5; n += 1)
    socket.send(
      JSON.stringify({ id: String(n), type: 'subscribe', payload: { query: invalid(i * 10 + n), operationName: `Probe${i * 10 + n}` } }),
    );
  const code = await new Promise<number>((resolve) => socket.once('close', (closeCode) => resolve(closeCode)));
  return { messages, code };
}

async function attack(running: RunningGateway): Promise<void> {
  for (const [name, ask] of Object.entries(paths)) {
    for (let i = 0; i < ATTEMPTS; i += 1) {
      const { status, text } = await ask(running.url, i);
      // Where GraphiQL is served, a browser's GET gets the page (the same for everyone, the document unread).
      if (name === 'GET that also accepts HTML' && status === 200 && text.startsWith('<!doctype html>')) {
        expect(text).not.toMatch(/Probe/);
        continue;
      }
      // Refused for its key, not for its document: nothing of the document was read.
      expect(status, `${name}: ${text}`).toBe(401);
      expect(text, name).toMatch(/UNAUTHENTICATED/);
      expect(text, name).not.toMatch(/nope\d|Probe/);
    }
  }
  for (let i = 0; i < 5; i += 1) {
    const { messages, code } = await webSocketAttempt(running.url, i);
    expect(messages, 'no subscribe answered').toEqual([]);
    expect([4401, 4403], `closed with ${code}`).toContain(code);
  }
}

describe('requests without a valid key', () => {
  it.each([
    ['defaults', {}],
    ['trusted documents only (no GraphiQL page)', { TRUSTED_DOCUMENTS: 'only' }],
    ['production', { NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow' }],
  ])(
    'are refused before their document is read, and make no metric series (%s)',
    async (_name, env: Record<string, string>) => {
      const running = await startGateway(env);
      try {
        const before = await seriesOf(running.url);
        await attack(running);
        const after = await seriesOf(running.url);
        expect([...after].filter((series) => !before.has(series))).toEqual([]);
        expect([...after].join('\n')).not.toMatch(/Probe/);

        // The same gateway still names a client's operations once it has a valid key.
        if (env.TRUSTED_DOCUMENTS) return;
        const named = await fetch(`${running.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: TEST_KEY },
          body: JSON.stringify({ query: 'query Named { __typename }' }),
        });
        expect(named.status).toBe(200);
        expect([...(await seriesOf(running.url))].join('\n')).toMatch(/operation="Named"/);
      } finally {
        await running.close();
      }
    },
    60_000,
  );
});
