import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createFrontDoor, registerRoutes } from '../../src/http/front-door.js';
import { createLogger } from '../../src/logging/logger.js';

/*
 * The front door reads every body as bytes and leaves the client's headers as
 * they came: a route (yoga for /graphql, the contract's envelope for REST)
 * judges the media type it was sent. A Content-Type that is no media type at
 * all is refused 415 naming the header, in the route's own envelope. Each is
 * sent three times: the media type parser caches what it saw.
 */

const SENDS = 3;

describe("the front door and the client's Content-Type", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = createFrontDoor({
      logger: createLogger('silent'),
      maxBodyBytes: 1_024,
      requestTimeoutMs: 5_000,
      upstreamCallsPerRequest: 10,
      headersTimeoutMs: 5_000,
      stopMs: 1_000,
      onMasked: () => {},
      notFound: (_request, reply) => reply.code(404).send({}),
    });
    const echo = (request: { headers: Record<string, unknown>; body: unknown }) => ({
      contentType: request.headers['content-type'],
      bytes: Buffer.isBuffer(request.body) ? request.body.length : null,
    });
    registerRoutes(app, [
      { method: 'POST', url: '/rest-echo', envelope: 'rest', transport: 'rest', operation: 'echo', handler: echo },
      { method: 'POST', url: '/graphql-echo', envelope: 'graphql', transport: 'graphql', operation: 'echo', handler: echo },
    ]);
    await app.ready();
  });
  afterAll(() => app.close());

  for (const contentType of [
    'application/json',
    'application/json; charset=utf-8',
    'text/plain;charset=UTF-8',
    'application/x-www-form-urlencoded',
    'application/graphql',
    'image/png',
  ]) {
    it(`hands "${contentType}" to the route as sent, with the body as bytes`, async () => {
      for (const url of ['/rest-echo', '/graphql-echo']) {
        for (let send = 1; send <= SENDS; send += 1) {
          const response = await app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload: '{"a":1}' });
          expect(response.statusCode, `${url}, send ${send}`).toBe(200);
          expect(response.json(), `${url}, send ${send}`).toEqual({ contentType, bytes: 7 });
        }
      }
    });
  }

  for (const contentType of ['json', 'text/', 'application/ json', '/']) {
    it(`refuses the malformed "${contentType}" with 415 naming Content-Type, in the route's envelope`, async () => {
      for (let send = 1; send <= SENDS; send += 1) {
        const rest = await app.inject({ method: 'POST', url: '/rest-echo', headers: { 'content-type': contentType }, payload: '{}' });
        expect(rest.statusCode, `send ${send}`).toBe(415);
        expect(rest.json<{ errors: { message: string } }>().errors.message).toMatch(/Content-Type/);
        const graphql = await app.inject({ method: 'POST', url: '/graphql-echo', headers: { 'content-type': contentType }, payload: '{}' });
        expect(graphql.statusCode, `send ${send}`).toBe(415);
        const { errors } = graphql.json<{ errors: Array<{ message: string; extensions: { code: string } }> }>();
        expect(errors[0]?.message).toMatch(/Content-Type/);
        expect(errors[0]?.extensions.code).toBe('BAD_REQUEST');
      }
    });
  }
});
