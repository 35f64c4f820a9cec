import { pino, type Logger } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Config } from '../../src/config/config.js';
import { startGateway, TEST_KEY, tuneUpstream, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { waitFor } from '../helpers/wait-for.js';
import { jsonLines } from '../helpers/log-lines.js';

/*
 * Bounds on a sick upstream, also at shutdown: an upstream that drips, hangs or
 * says too much, and clients that leave. Each bound is checked with a
 * generous margin: what is tested is "seconds instead of a minute", not speed.
 */

/** The key the gateway sends upstream; clients use TEST_KEY. */
const KEY = 'upstream-key';
const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const each of running.splice(0).reverse()) await each.close();
});

async function upstreamAndGateway(
  env: Record<string, string>,
  logger?: Logger,
  tune?: (config: Config) => Config,
): Promise<{ upstream: StandInUpstream; gateway: RunningGateway }> {
  const upstream = await startStandInUpstream({ keys: [KEY] });
  running.push(upstream);
  const gateway = await startGateway(
    { BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY, ...env },
    logger ? { logger } : {},
    tune,
  );
  running.push(gateway);
  return { upstream, gateway };
}

/** A logger whose JSON lines a test can read. */
function capturedLogger(): { logger: Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const stream = jsonLines<Record<string, any>>((line) => lines.push(line));
  return { logger: pino({ level: 'info' }, stream), lines };
}

const timed = async <T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
};

const transactionQuery = (id: string) => `{ transaction(id: "${id}") { transactionId status } }`;

describe('one deadline per upstream call (UPSTREAM_TIMEOUT_MS)', () => {
  it('bounds a call whose body drips, retries and body included', async () => {
    const { upstream, gateway } = await upstreamAndGateway({ UPSTREAM_TIMEOUT_MS: '1000' });
    const id = upstream.transactions[0]!.transactionId as string;
    upstream.injectFault({ kind: 'drip', everyMs: 200 }, { pathPrefix: '/transactions', times: 100 });

    const rest = await timed(() => fetch(`${gateway.url}/transactions/${id}`, { headers: { authorization: TEST_KEY } }));
    expect(rest.value.status).toBe(504);
    expect(rest.ms).toBeLessThan(3_000);

    const graphql = await timed(() => postGraphQL(gateway.url, transactionQuery(id), { key: TEST_KEY }));
    expect(codesOf(graphql.value)).toEqual(['UPSTREAM_TIMEOUT']);
    expect(graphql.ms).toBeLessThan(3_000);
    // The timed-out calls are closed, not left dripping.
    expect(await waitFor(() => upstream.openRequests === 0, 2_000)).toBe(true);
  }, 20_000);

  it('does not let dripping calls starve others, opens the breaker and tells readiness', async () => {
    const { upstream, gateway } = await upstreamAndGateway(
      { UPSTREAM_TIMEOUT_MS: '800', UPSTREAM_MAX_CONCURRENT: '4' },
      undefined,
      tuneUpstream({ breaker: { minimumCalls: 4, resetTimeoutMs: 60_000 } }),
    );
    const id = upstream.transactions[0]!.transactionId as string;
    upstream.injectFault({ kind: 'drip', everyMs: 200 }, { pathPrefix: '/transactions', times: 8 });
    // Distinct ids: identical reads would share one call.
    const dripping = Array.from({ length: 8 }, (_, i) =>
      fetch(`${gateway.url}/transactions/t-${i}`, { headers: { authorization: TEST_KEY } }),
    );
    await waitFor(() => upstream.openRequests >= 4, 2_000);

    // Behind four dripping calls in the four slots: answered once their deadline frees one.
    const healthy = await timed(() => fetch(`${gateway.url}/vendings`, { headers: { authorization: TEST_KEY } }));
    expect(healthy.ms).toBeLessThan(4_000);
    // Served, or refused in time: an open breaker (502) or its deadline passed while it waited (504).
    expect([200, 502, 504]).toContain(healthy.value.status);

    const statuses = await Promise.all(dripping.map(async (each) => (await each).status));
    expect(statuses.filter((status) => status === 504).length).toBeGreaterThanOrEqual(4);
    // Timeouts are failures: the breaker opens and readiness says the upstream is sick.
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);
    const refused = await fetch(`${gateway.url}/transactions/${id}`, { headers: { authorization: TEST_KEY } });
    expect(refused.status).toBe(502);
  }, 30_000);

  it('counts the time a call waits for a free slot against its deadline', async () => {
    const { upstream, gateway } = await upstreamAndGateway(
      { UPSTREAM_TIMEOUT_MS: '1000', UPSTREAM_MAX_CONCURRENT: '2' },
      undefined,
      tuneUpstream({ breaker: { enabled: false } }),
    );
    upstream.injectFault({ kind: 'drip', everyMs: 200 }, { pathPrefix: '/transactions', times: 8 });
    // Eight dripping calls, two at a time: without the wait counted, the last would answer after four deadlines.
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        timed(() => fetch(`${gateway.url}/transactions/t-${i}`, { headers: { authorization: TEST_KEY } })),
      ),
    );
    expect(answers.map(({ value }) => value.status)).toEqual(Array(8).fill(504));
    expect(Math.max(...answers.map(({ ms }) => ms))).toBeLessThan(2_000);
  }, 20_000);
});

describe('work stops when its client leaves', () => {
  it('aborts the upstream call of an HTTP request whose client went away', async () => {
    const { upstream, gateway } = await upstreamAndGateway({ UPSTREAM_TIMEOUT_MS: '60000' });
    const id = upstream.transactions[0]!.transactionId as string;
    upstream.injectFault({ kind: 'hang' }, { pathPrefix: '/transactions', times: 10 });

    for (const send of [
      (signal: AbortSignal) => fetch(`${gateway.url}/transactions/${id}`, { headers: { authorization: TEST_KEY }, signal }),
      (signal: AbortSignal) =>
        fetch(`${gateway.url}/graphql`, {
          method: 'POST',
          headers: { authorization: TEST_KEY, 'content-type': 'application/json' },
          body: JSON.stringify({ query: transactionQuery(id) }),
          signal,
        }),
    ]) {
      const leaving = new AbortController();
      const sent = send(leaving.signal).catch(() => undefined);
      expect(await waitFor(() => upstream.openRequests === 1, 2_000)).toBe(true);
      leaving.abort();
      await sent;
      expect(await waitFor(() => upstream.openRequests === 0, 2_000)).toBe(true);
    }
  }, 20_000);

  it('drops the queued part of a batch when its client leaves', async () => {
    const { upstream, gateway } = await upstreamAndGateway({ UPSTREAM_TIMEOUT_MS: '60000' }, undefined, (config) => ({
      ...config,
      batching: { ...config.batching, transactionConcurrency: 4 },
    }));
    upstream.injectFault({ kind: 'hang' }, { pathPrefix: '/transactions', times: 100 });
    const ids = Array.from({ length: 40 }, (_, i) => `t-${i}`);
    const leaving = new AbortController();
    const sent = fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { authorization: TEST_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'query ($ids: [ID!]!) { transactions(ids: $ids) { transactionId } }', variables: { ids } }),
      signal: leaving.signal,
    }).catch(() => undefined);
    expect(await waitFor(() => upstream.openRequests === 4, 2_000)).toBe(true);
    leaving.abort();
    await sent;
    expect(await waitFor(() => upstream.openRequests === 0, 2_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(upstream.callsTo('GET', '/transactions').length).toBe(4);
  }, 20_000);

  it('aborts the upstream calls of a WebSocket whose client closed it', async () => {
    const { upstream, gateway } = await upstreamAndGateway({ UPSTREAM_TIMEOUT_MS: '60000' });
    const id = upstream.transactions[0]!.transactionId as string;
    upstream.injectFault({ kind: 'hang' }, { pathPrefix: '/transactions', times: 10 });
    const socket = new WebSocket(`${gateway.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: TEST_KEY } }));
    await new Promise((resolve) => socket.once('message', resolve));
    socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: transactionQuery(id) } }));
    expect(await waitFor(() => upstream.openRequests === 1, 2_000)).toBe(true);
    socket.close();
    expect(await waitFor(() => upstream.openRequests === 0, 2_000)).toBe(true);
  }, 20_000);

  it('keeps a shared read going for the clients still waiting for it', async () => {
    const { upstream, gateway } = await upstreamAndGateway({ UPSTREAM_TIMEOUT_MS: '60000' });
    const id = upstream.transactions[0]!.transactionId as string;
    upstream.injectFault({ kind: 'delay', ms: 600 }, { pathPrefix: '/transactions', times: 1 });
    const leaving = new AbortController();
    const first = fetch(`${gateway.url}/transactions/${id}`, { headers: { authorization: TEST_KEY }, signal: leaving.signal }).catch(
      () => undefined,
    );
    await waitFor(() => upstream.openRequests === 1, 2_000);
    const second = fetch(`${gateway.url}/transactions/${id}`, { headers: { authorization: TEST_KEY } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    leaving.abort();
    await first;
    const answer = await second;
    expect(answer.status).toBe(200);
    expect(upstream.callsTo('GET', '/transactions').length).toBe(1);
  }, 20_000);
});

describe('upstream text stays inside', () => {
  const secret = 'password=hunter2 at postgres://admin:hunter2@db.internal:5432/vending';

  it('answers a message of its own and logs the upstream text with the request id', async () => {
    const { logger, lines } = capturedLogger();
    const { upstream, gateway } = await upstreamAndGateway({}, logger);
    const id = upstream.transactions[0]!.transactionId as string;
    for (const status of [500, 404, 400, 409]) {
      upstream.injectFault({ kind: 'status', status, body: JSON.stringify({ errors: { message: secret } }) }, { times: 2 });
      const rest = await fetch(`${gateway.url}/transactions/${id}`, {
        headers: { authorization: TEST_KEY, 'x-request-id': `rest-${status}` },
      });
      const restText = await rest.text();
      expect(restText).not.toContain('hunter2');
      expect(JSON.parse(restText).errors.message).toEqual(expect.any(String));
      const graphql = await postGraphQL(gateway.url, transactionQuery(id), { key: TEST_KEY });
      expect(JSON.stringify(graphql.body)).not.toContain('hunter2');
      expect(graphql.body.errors?.[0]?.message).toEqual(expect.any(String));
    }
    expect(lines.some((line) => line.requestId === 'rest-500' && JSON.stringify(line).includes('hunter2'))).toBe(true);
  }, 20_000);

  it("reports the upstream refusing the gateway's own key as the gateway's fault, loudly", async () => {
    const { logger, lines } = capturedLogger();
    const { upstream, gateway } = await upstreamAndGateway({}, logger);
    const id = upstream.transactions[0]!.transactionId as string;
    upstream.keys.clear();
    const rest = await fetch(`${gateway.url}/transactions/${id}`, { headers: { authorization: TEST_KEY } });
    expect(rest.status).toBe(502);
    const graphql = await postGraphQL(gateway.url, transactionQuery(id), { key: TEST_KEY });
    expect(codesOf(graphql)).toEqual(['UPSTREAM_ERROR']);
    expect(lines.some((line) => line.level >= 50 && /UPSTREAM_API_KEY/.test(String(line.msg)))).toBe(true);
  }, 20_000);
});

describe('shutdown', () => {
  it('is not held past its shutdown deadline by a hung upstream call', async () => {
    const upstream = await startStandInUpstream({ keys: [KEY] });
    running.push(upstream);
    const gateway = await startGateway(
      { BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY, UPSTREAM_TIMEOUT_MS: '60000' },
      {},
      (config) => ({ ...config, shutdownTimeoutMs: 500 }),
    );
    const id = upstream.transactions[0]!.transactionId as string;
    upstream.injectFault({ kind: 'drip', everyMs: 100 }, { pathPrefix: '/transactions', times: 10 });
    const held = fetch(`${gateway.url}/transactions/${id}`, { headers: { authorization: TEST_KEY } }).catch(() => undefined);
    await waitFor(() => upstream.openRequests === 1, 2_000);
    const stopped = await timed(() => gateway.close());
    expect(stopped.ms).toBeLessThan(3_000);
    await held;
  }, 20_000);
});
