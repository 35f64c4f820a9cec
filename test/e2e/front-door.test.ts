import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * One front door: every route refuses a body over MAX_BODY_BYTES with 413 (declared or chunked),
 * answers with an x-request-id, and is counted under its own route label.
 */

const LIMIT = 2_048;
const ROUTES: Array<[method: string, path: string]> = [
  ['POST', '/graphql'],
  ['GET', '/graphql'],
  ['GET', '/transactions/tx-1'],
  ['PUT', '/transactions/tx-1/payment'],
  ['GET', '/vendings'],
  ['GET', '/vendings/vm-1'],
  ['POST', '/webhooks'],
  ['GET', '/'],
  ['GET', '/dashboard/styles.css'],
  ['GET', '/healthz'],
  ['GET', '/readyz'],
  ['GET', '/metrics'],
  ['GET', '/no/such/path'],
  ['DELETE', '/vendings'],
];

interface Answer {
  status: number;
  requestId: string | undefined;
}

/** A raw request (node:http), so a GET can carry a body and a body can be chunked. */
function send(url: string, method: string, path: string, body: Buffer | undefined, chunked = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: TEST_KEY, 'content-type': 'application/json' };
    if (body && !chunked) headers['content-length'] = String(body.length);
    const req = httpRequest(`${url}${path}`, { method, headers }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, requestId: res.headers['x-request-id'] as string | undefined }));
    });
    req.once('error', reject);
    if (body && chunked) {
      // Written in pieces, without a length: the limit must be counted as they arrive.
      for (let at = 0; at < body.length; at += 512) req.write(body.subarray(at, at + 512));
    } else if (body) req.write(body);
    req.end();
  });
}

describe('the front door', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ MAX_BODY_BYTES: String(LIMIT) });
  });
  afterAll(() => running.close());
  const oversized = Buffer.from(JSON.stringify({ query: `{ vendings { totalCount } } # ${'x'.repeat(LIMIT)}` }));

  it.each(ROUTES)('%s %s with a declared body over MAX_BODY_BYTES → 413, with a request id', async (method, path) => {
    const answer = await send(running.url, method, path, oversized);
    expect(answer.status).toBe(413);
    expect(answer.requestId).toMatch(/^[\w.:-]{1,128}$/);
  });

  it.each(ROUTES.filter(([method]) => method === 'POST' || method === 'PUT'))(
    '%s %s with a chunked body over MAX_BODY_BYTES → 413',
    async (method, path) => {
      expect((await send(running.url, method, path, oversized, true)).status).toBe(413);
    },
  );

  it('answers every route, and an undecodable path, with a request id; counts each route under its own label', async () => {
    for (const [method, path] of ROUTES) {
      const answer = await send(running.url, method, path, undefined);
      expect(answer.status, `${method} ${path}`).toBeLessThan(500);
      expect(answer.requestId, `${method} ${path}`).toMatch(/^[\w.:-]{1,128}$/);
    }
    expect((await send(running.url, 'GET', '/%FF', undefined)).requestId).toMatch(/^[\w.:-]{1,128}$/);
    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    for (const operation of [
      'GET /transactions/{id}',
      'PUT /transactions/{id}/payment',
      'GET /vendings',
      'GET /vendings/{id}',
      'POST /webhooks',
      'GET /',
      'GET /dashboard/styles.css',
      'GET /healthz',
      'GET /readyz',
    ]) {
      expect(metrics).toContain(`operation="${operation}"`);
    }
    expect(metrics).toMatch(/vending_gateway_requests_total\{transport="graphql"/);
  });
});
