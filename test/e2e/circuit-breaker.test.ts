import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BreakerState } from '../../src/backends/rest/circuit-breaker.js';
import { createConcurrencyLimit } from '../../src/backends/rest/concurrency-limit.js';
import { createRestBackend, type RestBackend, type RestBackendOptions, type UpstreamCall } from '../../src/backends/rest/rest-backend.js';
import { loadConfig } from '../../src/config/config.js';
import { isGatewayError } from '../../src/errors.js';
import { answeringGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { waitFor } from '../helpers/wait-for.js';
import { clientCredential } from '../helpers/credentials.js';

/*
 * The protection in front of the upstream, against the fault-injecting stand-in:
 * the circuit breaker (open, fail fast, half-open probe) and the bound on
 * concurrent and queued requests. Small thresholds keep every case under a second.
 */
const KEY = 'upstream-key';
const credential = clientCredential(KEY);
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
/** The upstream settings a gateway would use; each case changes what it tests. */
const configured = loadConfig({ BACKEND: 'rest', UPSTREAM_URL: 'http://127.0.0.1:1', UPSTREAM_API_KEY: KEY }).upstream!;
const fast = { ...configured.breaker, minimumCalls: 4, resetTimeoutMs: 200 };
let upstream: StandInUpstream;
let backends: RestBackend[] = [];

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
});
afterAll(() => upstream.close());
afterEach(async () => {
  upstream.clearFaults();
  // A gateway may already have closed its backend; a second close may throw.
  await Promise.allSettled(backends.map((b) => b.close()));
  backends = [];
});

function backend(options: Partial<RestBackendOptions> = {}): RestBackend {
  const created = createRestBackend({ ...configured, url: upstream.url, timeoutMs: 1_000, connections: 10, retries: 0, ...options });
  backends.push(created);
  return created;
}

/** A backend with the `fast` breaker that records each state it enters. */
function watched(): { b: RestBackend; states: BreakerState[] } {
  const states: BreakerState[] = [];
  return { b: backend({ breaker: { ...fast, onStateChange: (state) => states.push(state) } }), states };
}

const txId = () => (upstream.transactions[0] as { transactionId: string }).transactionId;
const codeOf = (pending: Promise<unknown>): Promise<string> =>
  pending.then(
    () => 'ok',
    (error: unknown) => (isGatewayError(error) ? error.code : String(error)),
  );

/** Four 500s in a row: with `fast`, the fourth opens the circuit. */
async function trip(b: RestBackend): Promise<void> {
  upstream.injectFault({ kind: 'status', status: 500 }, { times: 4 });
  for (let i = 0; i < 4; i++) {
    expect(b.upstreamState().breaker).toBe('closed');
    expect(await codeOf(b.getTransaction(txId(), credential))).toBe('UPSTREAM_ERROR');
  }
  expect(b.upstreamState().breaker).toBe('open');
}

describe('circuit breaker', () => {
  it('opens after repeated 500s, then fails fast without reaching the upstream', async () => {
    const { b, states } = watched();
    await trip(b);
    const before = upstream.calls.length;
    const started = performance.now();
    const refused = await b.getTransaction(txId(), credential).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', message: expect.stringMatching(/circuit open/) });
    expect(await codeOf(b.listVendings({}, credential))).toBe('UPSTREAM_UNAVAILABLE');
    expect(await codeOf(b.updatePayment(txId(), { paid: true }, credential))).toBe('UPSTREAM_UNAVAILABLE');
    expect(performance.now() - started).toBeLessThan(100);
    expect(upstream.calls.length).toBe(before);
    expect(states).toEqual(['open']);
  });

  it('lets one probe through after the reset timeout and closes when it succeeds', async () => {
    const { b, states } = watched();
    await trip(b);
    const opened = performance.now();
    expect(await waitFor(() => b.upstreamState().breaker === 'half-open', 1_000, 5)).toBe(true);
    expect(performance.now() - opened).toBeGreaterThanOrEqual(180);
    const before = upstream.calls.length;
    expect(await codeOf(b.getTransaction(txId(), credential))).toBe('ok');
    expect(b.upstreamState().breaker).toBe('closed');
    expect(await codeOf(b.listVendings({}, credential))).toBe('ok');
    expect(upstream.calls.length - before).toBe(2);
    expect(states).toEqual(['open', 'half-open', 'closed']);
  });

  it('reopens when the probe fails', async () => {
    const { b, states } = watched();
    await trip(b);
    expect(await waitFor(() => b.upstreamState().breaker === 'half-open', 1_000, 5)).toBe(true);
    upstream.injectFault({ kind: 'status', status: 503 }, { times: 1 });
    const before = upstream.calls.length;
    expect(await codeOf(b.getTransaction(txId(), credential))).toBe('UPSTREAM_ERROR');
    expect(upstream.calls.length - before).toBe(1);
    expect(b.upstreamState().breaker).toBe('open');
    expect(await codeOf(b.getTransaction(txId(), credential))).toBe('UPSTREAM_UNAVAILABLE');
    expect(upstream.calls.length - before).toBe(1);
    expect(states).toEqual(['open', 'half-open', 'open']);
  });

  it('lets a single probe through at a time, and a timed-out probe reopens it', async () => {
    const b = backend({ timeoutMs: 250, breaker: fast });
    await trip(b);
    expect(await waitFor(() => b.upstreamState().breaker === 'half-open', 1_000, 5)).toBe(true);
    upstream.injectFault({ kind: 'hang' }, { times: 1 });
    const before = upstream.calls.length;
    const probe = codeOf(b.getTransaction(txId(), credential));
    expect(await waitFor(() => upstream.calls.length - before === 1)).toBe(true);
    expect(await codeOf(b.getTransaction(txId(), credential))).toBe('UPSTREAM_UNAVAILABLE');
    expect(await probe).toBe('UPSTREAM_TIMEOUT');
    expect(upstream.calls.length - before).toBe(1);
    expect(b.upstreamState().breaker).toBe('open');
  });

  it('never opens on 4xx answers, whatever their code', async () => {
    // Forward mode: a 401 or 403 is about the client's key (to the gateway's own key it is UPSTREAM_ERROR, sick-upstream.test.ts).
    const b = backend({ breaker: fast, apiKey: undefined });
    const before = upstream.calls.length;
    for (let i = 0; i < 4; i++) expect(await codeOf(b.getTransaction(UNKNOWN, credential))).toBe('NOT_FOUND');
    for (const status of [401, 403, 409, 422, 429]) upstream.injectFault({ kind: 'status', status }, { times: 1 });
    const codes = [];
    for (let i = 0; i < 5; i++) codes.push(await codeOf(b.getTransaction(txId(), credential)));
    expect(codes).toEqual(['UNAUTHENTICATED', 'FORBIDDEN', 'UPSTREAM_ERROR', 'BAD_USER_INPUT', 'RATE_LIMITED']);
    expect(b.upstreamState().breaker).toBe('closed');
    expect(upstream.calls.length - before).toBe(9);
  });

  it('passes every call through when disabled', async () => {
    const b = backend({ breaker: { ...fast, enabled: false } });
    upstream.injectFault({ kind: 'status', status: 500 }, { times: 8 });
    const before = upstream.calls.length;
    for (let i = 0; i < 8; i++) expect(await codeOf(b.getTransaction(txId(), credential))).toBe('UPSTREAM_ERROR');
    expect(upstream.calls.length - before).toBe(8);
    expect(b.upstreamState().breaker).toBe('closed');
  });

  it('shows an open circuit to GraphQL and REST clients as UPSTREAM_UNAVAILABLE', async () => {
    const b = backend({ breaker: fast });
    const gateway = await answeringGateway({}, { backend: b });
    try {
      await trip(b);
      const before = upstream.calls.length;
      const graphql = await postGraphQL(gateway, `{ transaction(id: "${txId()}") { status } }`);
      expect(codesOf(graphql)).toEqual(['UPSTREAM_UNAVAILABLE']);
      const rest = await gateway.fetch(`${gateway.url}/transactions/${txId()}`, { headers: { authorization: 'test-key-1' } });
      expect(rest.status).toBe(502);
      expect(await rest.json()).toEqual({ errors: { message: expect.stringMatching(/circuit open/) } });
      expect(upstream.calls.length).toBe(before);
    } finally {
      await gateway.close();
    }
  });
});

describe('bound on concurrent upstream requests', () => {
  it('keeps at most maxConcurrent at the upstream and refuses beyond maxQueued at once', async () => {
    const before = upstream.calls.length;
    const reported: UpstreamCall[] = [];
    // For each call that reached the upstream, how many had arrived there when it ended.
    const arrivedAtEnd: number[] = [];
    const b = backend({
      timeoutMs: 250,
      maxConcurrent: 2,
      maxQueued: 3,
      onUpstreamCall(call) {
        reported.push(call);
        if (call.attempts > 0) arrivedAtEnd.push(upstream.calls.length - before);
      },
    });
    upstream.injectFault({ kind: 'hang' }, { times: 5 });
    const five = Array.from({ length: 5 }, () => codeOf(b.getTransaction(txId(), credential)));
    expect(await waitFor(() => upstream.calls.length - before === 2)).toBe(true);
    expect(b.upstreamState()).toEqual({ breaker: 'closed', inFlight: 2, queued: 3 });

    const started = performance.now();
    const sixth = await b.getTransaction(txId(), credential).catch((error: unknown) => error);
    expect(performance.now() - started).toBeLessThan(50);
    expect(sixth).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', message: expect.stringMatching(/too many upstream requests waiting/i) });
    expect(reported).toEqual([expect.objectContaining({ outcome: 'UPSTREAM_UNAVAILABLE', attempts: 0 })]);

    expect(await Promise.all(five)).toEqual(Array(5).fill('UPSTREAM_TIMEOUT'));
    // The wait for a slot is part of each call's deadline: the three queued behind the
    // two hanging ones time out about when those free their slots, so few if any reach the upstream.
    expect(upstream.calls.length - before).toBeGreaterThanOrEqual(2);
    expect(upstream.calls.length - before).toBeLessThanOrEqual(5);
    // When the k-th call (from 0) ended, at most k + 2 had arrived: never more than two at once.
    arrivedAtEnd.forEach((arrived, k) => expect(arrived).toBeLessThanOrEqual(k + 2));
    // Five timeouts are below the default minimum of calls, so the circuit stays closed.
    expect(b.upstreamState()).toEqual({ breaker: 'closed', inFlight: 0, queued: 0 });
  });

  it('serves waiters in arrival order and frees the slot of failed work', async () => {
    const limit = createConcurrencyLimit({ maxConcurrent: 1, maxQueued: 2 });
    const order: string[] = [];
    let finish = () => {};
    const first = limit.run(() => new Promise<void>((resolve) => (finish = resolve)).then(() => order.push('first')));
    const failing = limit.run(async () => {
      order.push('failing');
      throw new Error('boom');
    });
    const last = limit.run(async () => order.push('last'));
    await expect(limit.run(async () => 'too many')).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect({ inFlight: limit.inFlight, queued: limit.queued }).toEqual({ inFlight: 1, queued: 2 });
    finish();
    await expect(failing).rejects.toThrow('boom');
    await Promise.all([first, last]);
    expect(order).toEqual(['first', 'failing', 'last']);
    expect({ inFlight: limit.inFlight, queued: limit.queued }).toEqual({ inFlight: 0, queued: 0 });
  });
});
