import { describe, expect, it } from 'vitest';
import { answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * CORS does not reflect any origin with credentials:
 * only the origins of CORS_ORIGINS get CORS headers (none in production
 * unless listed; local pages in development), and never
 * Access-Control-Allow-Credentials: the key travels in `Authorization`.
 */

const cors = (response: Response) =>
  Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'));

async function preflight(running: RunningGateway, origin: string): Promise<Record<string, string>> {
  const response = await running.fetch(`${running.url}/graphql`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  return cors(response);
}

async function post(running: RunningGateway, origin: string): Promise<Record<string, string>> {
  const response = await running.fetch(`${running.url}/graphql`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json', authorization: TEST_KEY },
    body: JSON.stringify({ query: '{ __typename }' }),
  });
  expect(response.status).toBe(200);
  return cors(response);
}

async function withGateway(env: Record<string, string>, check: (running: RunningGateway) => Promise<void>): Promise<void> {
  const running = await answeringGateway(env);
  try {
    await check(running);
  } finally {
    await running.close();
  }
}

describe('CORS on /graphql', () => {
  it('in production answers no origin unless listed, and never with credentials', () =>
    withGateway({ NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow' }, async (running) => {
      for (const origin of ['https://evil.example', 'http://localhost:3000', 'null']) {
        expect(await preflight(running, origin), origin).not.toHaveProperty('access-control-allow-origin');
        expect(await post(running, origin), origin).not.toHaveProperty('access-control-allow-origin');
      }
    }));

  it('allows the listed origins only, without credentials', () =>
    withGateway(
      { NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow', CORS_ORIGINS: 'https://app.example.com, http://localhost:*' },
      async (running) => {
        for (const origin of ['https://app.example.com', 'http://localhost:5173', 'http://localhost']) {
          const headers = await preflight(running, origin);
          expect(headers['access-control-allow-origin'], origin).toBe(origin);
          expect(headers['access-control-allow-headers']).toMatch(/authorization/);
          expect(headers['vary']).toMatch(/Origin/);
          expect(headers).not.toHaveProperty('access-control-allow-credentials');
          const answered = await post(running, origin);
          expect(answered['access-control-allow-origin']).toBe(origin);
          expect(answered).not.toHaveProperty('access-control-allow-credentials');
        }
        for (const origin of [
          'https://evil.example',
          'http://app.example.com',
          'https://app.example.com.evil.example',
          'http://localhost.evil.example:5173',
        ]) {
          const headers = { ...(await preflight(running, origin)), ...(await post(running, origin)) };
          expect(headers, origin).not.toHaveProperty('access-control-allow-origin');
          expect(headers, origin).not.toHaveProperty('access-control-allow-credentials');
        }
      },
    ));

  it('in development allows pages on this machine only', () =>
    withGateway({}, async (running) => {
      expect((await preflight(running, 'http://localhost:5173'))['access-control-allow-origin']).toBe('http://localhost:5173');
      expect((await preflight(running, 'http://127.0.0.1:8080'))['access-control-allow-origin']).toBe('http://127.0.0.1:8080');
      expect(await preflight(running, 'https://evil.example')).not.toHaveProperty('access-control-allow-origin');
      expect(await preflight(running, 'http://localhost:5173')).not.toHaveProperty('access-control-allow-credentials');
    }));
});
