import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';

/*
 * With Redis, a persisted query registered through one instance is served by
 * hash on every instance of the deployment (a load balancer sends the link's
 * two requests wherever it likes); and a Redis that does not answer reads as
 * "not registered", so the client sends the text and is served anyway.
 */

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('persisted queries shared through Redis', () => {
  let redis: TestRedis;
  let one: RunningGateway;
  let other: RunningGateway;
  beforeAll(async () => {
    redis = await startTestRedis();
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: `apq-${randomUUID()}:`, SIMULATOR: 'off' };
    one = await startGateway(env);
    other = await startGateway(env);
  });
  afterAll(async () => {
    await one?.close();
    await other?.close();
    await redis?.close();
  });

  const post = (gateway: RunningGateway, body: unknown) =>
    fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: TEST_KEY, accept: 'application/graphql-response+json' },
      body: JSON.stringify(body),
    }).then(async (answer) => ({
      status: answer.status,
      body: (await answer.json()) as { data?: unknown; errors?: Array<{ extensions: { code: string } }> },
    }));

  it('serves on every instance, by hash, what one instance registered', async () => {
    const query = `query Shared { vendings(first: 1) { totalCount } } # ${randomUUID()}`;
    const persistedQuery = { version: 1, sha256Hash: sha256(query) };
    const unknown = await post(other, { extensions: { persistedQuery } });
    expect(unknown.body.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect((await post(one, { query, extensions: { persistedQuery } })).status).toBe(200);
    for (const gateway of [other, one, other]) {
      const byHash = await post(gateway, { extensions: { persistedQuery } });
      expect(byHash.status).toBe(200);
      expect(byHash.body.data).toMatchObject({ vendings: { totalCount: expect.any(Number) } });
    }
  });

  it('reads a Redis that does not answer as "not registered": the text is served, never an error', async () => {
    const query = `query WhileAway { vendings(first: 1) { totalCount } } # ${randomUUID()}`;
    const persistedQuery = { version: 1, sha256Hash: sha256(query) };
    redis.pause();
    try {
      const byHash = await post(one, { extensions: { persistedQuery } });
      expect(byHash.body.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      const withText = await post(one, { query, extensions: { persistedQuery } });
      expect(withText.status).toBe(200);
      expect(withText.body.data).toMatchObject({ vendings: { totalCount: expect.any(Number) } });
    } finally {
      redis.resume();
    }
  });
});
