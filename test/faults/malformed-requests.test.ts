import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { answeringGateway, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * Malformed requests a seeded fuzz found answered as the gateway's own
 * failures: a GET whose `variables` or `extensions` is not JSON was a 500
 * "Unexpected error." with a stack trace logged (a POST body that is not JSON
 * is a 400), and a WebSocket client sending a message only a server sends
 * (`connection_ack`, `next`, `error`) was closed with 4500 while graphql-ws's
 * ws adapter printed a multi-line stack trace (the protocol says 4400). Each
 * is sent three times, with and without a browser's Origin.
 */

const SENDS = 3;
const ORIGINS = [undefined, 'http://127.0.0.1'];

describe('a GET whose JSON parameters are not JSON', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await answeringGateway();
  });
  afterAll(() => running.close());

  for (const [name, query] of [
    ['variables', 'query={__typename}&variables={'],
    ['variables', 'query={__typename}&variables=x'],
    ['extensions', 'query={__typename}&extensions=x'],
    ['extensions', `query=${encodeURIComponent('query Q($id: ID!) { transaction(id: $id) { status } }')}&extensions={"a":`],
  ] as const) {
    it(`is refused 400 naming "${name}": ${query}`, async () => {
      for (const origin of ORIGINS) {
        for (let send = 1; send <= SENDS; send += 1) {
          const response = await running.fetch(`${running.url}/graphql?${query}`, {
            headers: { authorization: TEST_KEY, accept: 'application/graphql-response+json', ...(origin ? { origin } : {}) },
          });
          const what = `${origin ?? 'no Origin'}, send ${send}`;
          expect(response.status, what).toBe(400);
          const body = (await response.json()) as { errors: Array<{ message: string; extensions?: { code?: string } }> };
          expect(body.errors[0]?.extensions?.code, what).toBe('BAD_REQUEST');
          expect(body.errors[0]?.message, what).toContain(`"${name}"`);
        }
      }
    });
  }

  it('still answers the same request with valid JSON', async () => {
    const response = await running.fetch(`${running.url}/graphql?query={__typename}&variables={}&extensions={}`, {
      headers: { authorization: TEST_KEY, accept: 'application/graphql-response+json' },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { __typename: 'Query' } });
  });
});

describe('a WebSocket client that sends a message only a server sends', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway();
  });
  afterAll(() => running.close());
  afterEach(() => vi.restoreAllMocks());

  /** Opens a connection (acknowledged when `init`), sends `message`, and resolves with the close code and what reached stderr. */
  async function closeFor(
    message: object | string,
    init: boolean,
    origin: string | undefined,
  ): Promise<{ code: number; printed: unknown[][] }> {
    const printed: unknown[][] = [];
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void printed.push(args));
    const socket = new WebSocket(`${running.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', origin ? { origin } : {});
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    await new Promise((resolve) => socket.once('open', resolve));
    if (init) {
      const acknowledged = new Promise((resolve) => socket.once('message', resolve));
      socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: TEST_KEY } }));
      await acknowledged;
    }
    socket.send(typeof message === 'string' ? message : JSON.stringify(message));
    return { code: await closed, printed };
  }

  for (const message of [
    { type: 'connection_ack' },
    { type: 'next', id: '1', payload: { data: {} } },
    { type: 'error', id: '1', payload: [{ message: 'x' }] },
  ]) {
    it(`closes with 4400 and logs no stack trace: ${message.type}`, async () => {
      for (const origin of ORIGINS) {
        for (const init of [true, false]) {
          for (let send = 1; send <= SENDS; send += 1) {
            const { code, printed } = await closeFor(message, init, origin);
            const what = `${origin ?? 'no Origin'}, ${init ? 'after' : 'before'} connection_init, send ${send}`;
            expect(code, what).toBe(4400);
            expect(printed, what).toEqual([]);
          }
        }
      }
    });
  }

  it('closes a message over the size limit with 1009 and logs no stack trace', async () => {
    // Over MAX_BODY_BYTES (1 MiB by default) and so over the 64 KiB WebSocket bound.
    const oversized = JSON.stringify({ type: 'subscribe', id: '1', payload: { query: `{ __typename } # ${'x'.repeat(70_000)}` } });
    for (const origin of ORIGINS) {
      for (let send = 1; send <= SENDS; send += 1) {
        const { code, printed } = await closeFor(oversized, true, origin);
        const what = `${origin ?? 'no Origin'}, send ${send}`;
        expect(code, what).toBe(1009);
        expect(printed, what).toEqual([]);
      }
    }
  });
});
