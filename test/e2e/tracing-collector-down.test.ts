import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait-for.js';
import { jsonLines } from '../helpers/log-lines.js';

/*
 * An operator who points OTEL_EXPORTER_OTLP_ENDPOINT at a collector that is
 * not there is told so (the independent trial saw spans lost without a word):
 * the gateway says at start where spans go, and the SDK's export failures
 * become warnings, each kind at most once a minute. Requests are served all
 * the same, and a stop does not wait for the collector longer than 2 s.
 * (Its own file: the SDK is one per process.)
 */

let running: RunningGateway;
let endpoint: string;
const lines: Array<Record<string, unknown>> = [];

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  endpoint = `http://127.0.0.1:${await closedPort()}`;
  const destination = jsonLines<Record<string, unknown>>((line) => lines.push(line));
  running = await startGateway(
    { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint },
    { logger: createLogger('info', { traceIds: true, destination }) },
    (config) => ({
      ...config,
      tracing: config.tracing && { ...config.tracing, exportDelayMs: 20 },
    }),
  );
});
afterAll(() => running?.close());

describe('tracing to a collector that does not answer', () => {
  it('says where spans go, serves requests, and warns that they cannot be exported', async () => {
    const started = lines.find((line) => String(line.msg).startsWith('tracing on'));
    expect(started?.endpoint).toBe(`${endpoint}/v1/traces`);
    for (let i = 0; i < 3; i++) expect((await postGraphQL(running.url, '{ vendings { totalCount } }', { key: TEST_KEY })).status).toBe(200);
    expect(await waitFor(() => lines.some((line) => line.level === 40 && String(line.msg).startsWith('tracing:')), 10_000, 50)).toBe(true);
    const warnings = lines.filter((line) => line.level === 40 && String(line.msg).startsWith('tracing:'));
    expect(new Set(warnings.map((line) => line.msg)).size).toBe(warnings.length);
  });

  it('does not hold a stop waiting for it', async () => {
    const started = performance.now();
    await running.close();
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
