import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Plugin } from 'graphql-yoga';
import { afterEach, describe, expect, it } from 'vitest';
import { createDirectLane, type DirectResponder } from '../../src/http/direct-lane.js';
import { jsonResponse } from '../../src/http/json-response.js';

/* The direct lane on a real socket: hooks in order, early answers, and failures answered masked, never a crash. */

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function serveWith(hooks: Plugin[], respond: DirectResponder): Promise<{ url: string; unexpected: unknown[] }> {
  const unexpected: unknown[] = [];
  const lane = createDirectLane({
    hooks,
    onUnexpectedError(error) {
      unexpected.push(error);
      return jsonResponse({ errors: [{ message: 'Unexpected error.' }] }, 500);
    },
  });
  server = createServer((req, res) => void lane(req, res, new URL(req.url ?? '/', 'http://localhost'), respond));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, unexpected };
}

describe('direct lane', () => {
  it('runs request hooks in order, then the responder, then response hooks that may add headers', async () => {
    const seen: string[] = [];
    const hooks: Plugin[] = [
      { onRequest: () => void seen.push('first') },
      { onRequest: async () => void seen.push('second (async)'), onResponse: ({ response }) => void response.headers.set('x-seen', seen.join(',')) },
    ];
    const { url } = await serveWith(hooks, async (request, at) => {
      seen.push(`respond ${request.method} ${at.pathname}`);
      return jsonResponse({ ok: true });
    });
    const answer = await fetch(`${url}/vendings?x=1`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-seen')).toBe('first,second (async),respond GET /vendings');
    expect(answer.headers.get('content-length')).toBe(String('{"ok":true}'.length));
    expect(await answer.json()).toEqual({ ok: true });
  });

  it('answers what a request hook ends early with, without calling the responder', async () => {
    let called = false;
    const { url } = await serveWith([{ onRequest: ({ endResponse }) => endResponse(jsonResponse({ early: true }, 418)) }], async () => {
      called = true;
      return jsonResponse({});
    });
    const answer = await fetch(url);
    expect(answer.status).toBe(418);
    expect(await answer.json()).toEqual({ early: true });
    expect(called).toBe(false);
  });

  it('answers a throwing responder or hook with the masked 500, and goes on serving', async () => {
    const failing = new Error('secret detail');
    const { url, unexpected } = await serveWith([{ onResponse: ({ request }) => {
      if (new URL(request.url).pathname === '/hook') throw failing;
    } }], async (_request, at) => {
      if (at.pathname === '/respond') throw failing;
      return jsonResponse({ fine: true });
    });
    for (const path of ['/respond', '/hook']) {
      const answer = await fetch(`${url}${path}`);
      expect(answer.status, path).toBe(500);
      const text = await answer.text();
      expect(text).toBe('{"errors":[{"message":"Unexpected error."}]}');
      expect(text).not.toContain('secret');
    }
    expect(unexpected).toEqual([failing, failing]);
    expect((await fetch(`${url}/fine`)).status).toBe(200);
  });
});
