import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { GatewayError } from '../../src/errors.js';
import { forwardModeEnv } from '../helpers/gateway.js';
import { createUpstreamKeyCheck, isRefusal, type UpstreamKeyCheckOptions } from '../../src/auth/upstream-key-check.js';

/*
 * The verdict cache of forward mode, against a probe that plays the upstream:
 * `accepted` keys pass, others get the upstream's 401, and `failing` makes it
 * fail without a verdict. Timers and Date.now are vitest's fake ones.
 */
function upstreamProbe() {
  const asked: string[] = [];
  const state = {
    accepted: new Set<string>(['good']),
    failing: undefined as GatewayError | undefined,
    gate: undefined as Promise<void> | undefined,
  };
  const probe = async (authorization: string) => {
    asked.push(authorization);
    await state.gate;
    if (state.failing) throw state.failing;
    if (!state.accepted.has(authorization)) throw new GatewayError('UNAUTHENTICATED', 'invalid API key', { upstreamStatus: 401 });
    return [];
  };
  return { asked, state, probe };
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'accepted',
    (error: GatewayError) => error.code,
  );

let upstream: ReturnType<typeof upstreamProbe>;
const make = (options: Partial<UpstreamKeyCheckOptions> = {}) =>
  createUpstreamKeyCheck({ probe: upstream.probe, ttlMs: 1_000, checksPerSecond: 100, ...options });

beforeEach(() => {
  vi.useFakeTimers();
  upstream = upstreamProbe();
});
afterEach(() => vi.useRealTimers());

describe('verdicts', () => {
  it('are remembered for the period, accepted and refused alike, then asked again', async () => {
    const check = make();
    expect(await codeOf(check.check('good'))).toBe('accepted');
    expect(await codeOf(check.check('made-up'))).toBe('UNAUTHENTICATED');
    expect(await codeOf(check.check('good'))).toBe('accepted');
    expect(await codeOf(check.check('made-up'))).toBe('UNAUTHENTICATED');
    expect(upstream.asked).toEqual(['good', 'made-up']);
    vi.advanceTimersByTime(1_000);
    upstream.state.accepted.delete('good');
    expect(await codeOf(check.check('good'))).toBe('UNAUTHENTICATED');
    expect(upstream.asked).toEqual(['good', 'made-up', 'good']);
  });

  it("keep the upstream's status and message, and fail the whole request", async () => {
    const error = await make()
      .check('made-up')
      .catch((caught: GatewayError) => caught);
    expect(isRefusal(error)).toBe(true);
    expect(error).toMatchObject({ code: 'UNAUTHENTICATED', message: 'invalid API key', httpStatus: 401 });
    expect((error as GatewayError).extensions.http).toMatchObject({ status: 401 });
  });

  it('are asked once for all concurrent checks of a key', async () => {
    let open!: () => void;
    upstream.state.gate = new Promise((resolve) => (open = resolve));
    const check = make();
    const all = Array.from({ length: 30 }, () => codeOf(check.check('made-up')));
    open();
    expect(new Set(await Promise.all(all))).toEqual(new Set(['UNAUTHENTICATED']));
    expect(upstream.asked).toHaveLength(1);
  });

  it('are not remembered when the upstream gave none, and the client is told to retry', async () => {
    const check = make();
    upstream.state.failing = new GatewayError('UPSTREAM_UNAVAILABLE', 'Upstream is unreachable (ECONNREFUSED)');
    const error = await check.check('good').catch((caught: GatewayError) => caught);
    expect(isRefusal(error)).toBe(false);
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', headers: { 'retry-after': '1' } });
    upstream.state.failing = new GatewayError('NOT_FOUND', 'no route for /vendings', { upstreamStatus: 404 });
    expect(await codeOf(check.check('good'))).toBe('UPSTREAM_ERROR');
    upstream.state.failing = undefined;
    expect(await codeOf(check.check('good'))).toBe('accepted');
    expect(upstream.asked).toHaveLength(3);
  });

  it('are at most `maxEntries`, the oldest forgotten first', async () => {
    const check = make({ maxEntries: 2 });
    for (const key of ['a', 'b', 'c', 'b', 'a']) await check.check(key).catch(() => undefined);
    expect(upstream.asked).toEqual(['a', 'b', 'c', 'a']);
  });
});

describe('the instance limit', () => {
  it('starts at most `checksPerSecond` checks in any second, then RATE_LIMITED with Retry-After', async () => {
    const check = make({ checksPerSecond: 3 });
    const first = await Promise.all(
      ['k1', 'k2', 'k3', 'k4'].map((key) =>
        check.check(key).then(
          () => undefined,
          (error: GatewayError) => error,
        ),
      ),
    );
    expect(first.map((error) => error?.code)).toEqual(['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED', 'RATE_LIMITED']);
    expect(first[3]).toMatchObject({ headers: { 'retry-after': '1' }, extensions: { http: { status: 429 } } });
    // Remembered verdicts cost nothing.
    expect(await codeOf(check.check('k1'))).toBe('UNAUTHENTICATED');
    vi.advanceTimersByTime(999);
    expect(await codeOf(check.check('k5'))).toBe('RATE_LIMITED');
    vi.advanceTimersByTime(1);
    expect(await codeOf(check.check('k5'))).toBe('UNAUTHENTICATED');
    expect(upstream.asked).toEqual(['k1', 'k2', 'k3', 'k5']);
  });
});

describe('a watched key', () => {
  it('is asked again every period, and its watchers are told once when the upstream refuses it', async () => {
    const check = make();
    upstream.state.accepted.add('live');
    await check.check('live');
    const refusals: GatewayError[][] = [[], []];
    const stops = refusals.map((list) => check.watch('live', (error) => list.push(error)));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(upstream.asked).toEqual(['live', 'live']);
    upstream.state.failing = new GatewayError('UPSTREAM_TIMEOUT', 'slow');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(refusals.flat()).toHaveLength(0);
    upstream.state.failing = undefined;
    upstream.state.accepted.delete('live');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(refusals.map((list) => list.map((error) => error.code))).toEqual([['UNAUTHENTICATED'], ['UNAUTHENTICATED']]);
    // Ends a subscription, not a request: no HTTP status rides along.
    expect(refusals[0]![0]!.extensions.http).toBeUndefined();
    stops.forEach((stop) => stop());
    await vi.advanceTimersByTimeAsync(5_000);
    expect(upstream.asked).toHaveLength(4);
  });

  it('is no longer asked once its last watcher leaves', async () => {
    const check = make();
    const stop = check.watch('good', () => undefined);
    await vi.advanceTimersByTimeAsync(1_000);
    stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(upstream.asked).toEqual(['good']);
  });

  it('is asked again, over the instance limit too, since only accepted keys are watched', async () => {
    const check = make({ checksPerSecond: 1 });
    await check.check('good');
    check.watch('good', () => undefined);
    expect(await codeOf(check.check('other'))).toBe('RATE_LIMITED');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(upstream.asked).toEqual(['good', 'good']);
    check.close();
  });
});

describe('configuration', () => {
  const forward = forwardModeEnv('http://127.0.0.1:9999');
  it('remembers verdicts 30 s and starts 20 checks a second', () => {
    expect(loadConfig(forward).upstream?.keyCheck).toEqual({ ttlMs: 30_000, checksPerSecond: 20 });
  });
  it('says at start that FORWARD_KEY_TTL_MS is read no more, and what holds instead', () => {
    const config = loadConfig({ ...forward, FORWARD_KEY_TTL_MS: '500' });
    expect(config.upstream?.keyCheck.ttlMs).toBe(30_000);
    expect(config.retiredVariables).toEqual([{ name: 'FORWARD_KEY_TTL_MS', instead: expect.stringContaining('30 s') as unknown }]);
  });
});
