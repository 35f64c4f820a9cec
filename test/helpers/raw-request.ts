import { request as httpRequest } from 'node:http';
import { TEST_KEY } from './gateway.js';

/**
 * Sends a request to the gateway at `baseUrl` with its path exactly as given (fetch would resolve `..` and
 * re-encode), with the test key; resolves with the status and body.
 */
export function rawRequest(baseUrl: string, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: hostname, port, method, path, headers: { authorization: TEST_KEY, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** How many calls the stand-in service got while `work` ran, and its result. */
export async function upstreamCallsDuring<T>(
  upstream: { calls: readonly unknown[] },
  work: () => Promise<T>,
): Promise<{ calls: number; result: T }> {
  const before = upstream.calls.length;
  const result = await work();
  return { calls: upstream.calls.length - before, result };
}
