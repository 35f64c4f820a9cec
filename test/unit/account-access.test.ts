import type { LRUCache } from 'lru-cache';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAccountAccess, type AccountAccessOptions, type ForwardAccountOptions } from '../../src/auth/account-access.js';
import { createUpstreamKeyCheck } from '../../src/auth/upstream-key-check.js';
import { createCheckLimit } from '../../src/auth/upstream-verdicts.js';
import type { Credential, Identity } from '../../src/backends/backend.js';
import { GatewayError } from '../../src/errors.js';

/*
 * Which account's transactions a credential may receive. With the gateway's
 * own keys the identity names its account; in forward mode a probe plays the
 * service: it lets a key read the transactions of its own accounts, answers
 * 404 for those of others and 401 for a key it does not know, and `failing`
 * makes it fail without a verdict. Timers and Date.now are vitest's fake ones.
 */

// Every bounded memory the account access makes, to look into what it keeps.
const caches = vi.hoisted(() => [] as Array<LRUCache<string, NonNullable<unknown>>>);
vi.mock('../../src/backends/bounded-cache.js', async (original) => {
  const actual = await original<typeof import('../../src/backends/bounded-cache.js')>();
  return {
    ...actual,
    boundedCache: (options: Parameters<typeof actual.boundedCache>[0]) => {
      const cache = actual.boundedCache(options);
      caches.push(cache);
      return cache;
    },
  };
});

function service() {
  const asked: Array<[key: string, transactionId: string]> = [];
  const state = {
    /** The accounts each key is of. */
    keys: new Map<string, string[]>([
      ['key-a', ['a']],
      ['key-b', ['b']],
      ['key-ab', ['a', 'b']],
      ['key-plain', ['']],
    ]),
    /** The account of each transaction. */
    transactions: new Map<string, string>([
      ['ta1', 'a'],
      ['ta2', 'a'],
      ['tb1', 'b'],
      ['tp1', ''],
      ['tp2', 'b'],
    ]),
    failing: undefined as GatewayError | undefined,
    gate: undefined as Promise<void> | undefined,
  };
  const probe = async (authorization: string, transactionId: string) => {
    asked.push([authorization, transactionId]);
    await state.gate;
    if (state.failing) throw state.failing;
    const accounts = state.keys.get(authorization);
    if (!accounts) throw new GatewayError('UNAUTHENTICATED', 'invalid API key', { upstreamStatus: 401 });
    const account = state.transactions.get(transactionId);
    if (account === undefined || !accounts.includes(account))
      throw new GatewayError('NOT_FOUND', 'Transaction not found', { upstreamStatus: 404 });
    return { transactionId };
  };
  return { asked, state, probe };
}

const credential = (authorization: string, account?: string): Credential => {
  const identity: Identity = { id: 'test', permissions: new Set(['read']), ...(account === undefined ? {} : { account }) };
  return { authorization, identity };
};

let upstream: ReturnType<typeof service>;
const forward = (options: Partial<ForwardAccountOptions> = {}, more: Omit<AccountAccessOptions, 'forward'> = {}) =>
  createAccountAccess({ forward: { probe: upstream.probe, ttlMs: 1_000, checksPerSecond: 100, ...options }, ...more });

beforeEach(() => {
  vi.useFakeTimers();
  upstream = service();
  caches.length = 0;
});
afterEach(() => vi.useRealTimers());

describe("with the gateway's own keys and tokens", () => {
  const access = createAccountAccess();

  it('lets an identity read its own account only, one naming none the default account', async () => {
    expect(await access.mayRead(credential('k', 'a'), 'a', 'ta1')).toBe(true);
    expect(await access.mayRead(credential('k', 'a'), 'b', 'tb1')).toBe(false);
    expect(await access.mayRead(credential('k', 'a'), '', 'tp1')).toBe(false);
    expect(await access.mayRead(credential('k'), '', 'tp1')).toBe(true);
    expect(await access.mayRead(credential('k'), 'a', 'ta1')).toBe(false);
  });

  it("reads the history of the identity's account, and judges no account per transaction", async () => {
    access.note('b', 'tb1');
    expect(await access.historyAccount(credential('k', 'a'))).toBe('a');
    expect(await access.historyAccount(credential('k'))).toBe('');
    expect(access.judgesEachTransaction('')).toBe(false);
    expect(access.judgesEachTransaction('a')).toBe(false);
  });
});

describe('in forward mode, an account other than the default one', () => {
  it('is judged once per key and period, by any transaction of it, then asked again', async () => {
    const access = forward();
    expect(await access.mayRead(credential('key-a'), 'a', 'ta1')).toBe(true);
    expect(await access.mayRead(credential('key-a'), 'a', 'ta2')).toBe(true);
    expect(await access.mayRead(credential('key-b'), 'a', 'ta1')).toBe(false);
    expect(await access.mayRead(credential('key-b'), 'a', 'ta2')).toBe(false);
    expect(await access.mayRead(credential('made-up'), 'a', 'ta1')).toBe(false);
    expect(upstream.asked).toEqual([
      ['key-a', 'ta1'],
      ['key-b', 'ta1'],
      ['made-up', 'ta1'],
    ]);

    vi.advanceTimersByTime(999);
    expect(await access.mayRead(credential('key-a'), 'a', 'ta2')).toBe(true);
    expect(upstream.asked).toHaveLength(3);
    // The period is over: the service's word now counts, whatever it was.
    vi.advanceTimersByTime(1);
    upstream.state.keys.set('key-a', ['b']);
    upstream.state.keys.set('key-b', ['a', 'b']);
    expect(await access.mayRead(credential('key-a'), 'a', 'ta2')).toBe(false);
    expect(await access.mayRead(credential('key-b'), 'a', 'ta1')).toBe(true);
    expect(upstream.asked.slice(3)).toEqual([
      ['key-a', 'ta2'],
      ['key-b', 'ta1'],
    ]);
  });

  it('costs one upstream call for all concurrent asks of a key and account', async () => {
    let open!: () => void;
    upstream.state.gate = new Promise((resolve) => (open = resolve));
    const access = forward();
    const asks = [
      ...Array.from({ length: 20 }, (_, n) => access.mayRead(credential('key-ab'), 'a', n % 2 ? 'ta1' : 'ta2')),
      ...Array.from({ length: 20 }, () => access.mayRead(credential('key-ab'), 'b', 'tb1')),
    ];
    open();
    expect(new Set(await Promise.all(asks))).toEqual(new Set([true]));
    expect(upstream.asked).toEqual([
      ['key-ab', 'ta2'],
      ['key-ab', 'tb1'],
    ]);
  });

  it('keeps verdicts under a digest of the key, never the key', async () => {
    const access = forward();
    const secret = `secret-${Math.random().toString(36).slice(2)}`;
    upstream.state.keys.set(secret, ['a']);
    access.note('a', 'ta1');
    expect(await access.mayRead(credential(secret), 'a', 'ta1')).toBe(true);
    expect(await access.mayRead(credential(secret), '', 'tp1')).toBe(false);
    expect(await access.historyAccount(credential(secret))).toBe('a');
    const held = caches.flatMap((cache) => [...cache.entries()].map(([key, value]) => `${key} ${JSON.stringify(value)}`));
    expect(held.length).toBeGreaterThanOrEqual(3);
    for (const entry of held) expect(entry).not.toContain(secret);
  });

  it('holds at most `maxEntries` verdicts, the least recently used forgotten first', async () => {
    const access = forward({ maxEntries: 2 });
    for (const key of ['key-a', 'key-b', 'key-ab', 'key-b', 'key-a']) await access.mayRead(credential(key), 'a', 'ta1');
    expect(upstream.asked.map(([key]) => key)).toEqual(['key-a', 'key-b', 'key-ab', 'key-a']);
  });

  it('denies for now when the service gives no verdict, remembers nothing and asks again next time', async () => {
    const access = forward();
    for (const failure of [
      new GatewayError('UPSTREAM_TIMEOUT', 'Upstream did not answer within 10000 ms'),
      new GatewayError('UPSTREAM_ERROR', 'Upstream answered 500', { upstreamStatus: 500 }),
      new GatewayError('RATE_LIMITED', 'slow down', { upstreamStatus: 429 }),
      new Error('not even a GatewayError'),
    ]) {
      upstream.state.failing = failure as GatewayError;
      expect(await access.mayRead(credential('key-a'), 'a', 'ta1')).toBe(false);
    }
    upstream.state.failing = undefined;
    expect(await access.mayRead(credential('key-a'), 'a', 'ta1')).toBe(true);
    expect(upstream.asked).toHaveLength(5);
  });

  it('asks within the per-second limit, denying for now past it without asking', async () => {
    const access = forward({ checksPerSecond: 2 });
    expect(await access.mayRead(credential('key-a'), 'a', 'ta1')).toBe(true);
    expect(await access.mayRead(credential('key-b'), 'b', 'tb1')).toBe(true);
    expect(await access.mayRead(credential('key-ab'), 'a', 'ta1')).toBe(false);
    expect(upstream.asked).toHaveLength(2);
    vi.advanceTimersByTime(1_000);
    expect(await access.mayRead(credential('key-ab'), 'a', 'ta1')).toBe(true);
    expect(upstream.asked).toHaveLength(3);
  });

  it("shares the instance's limit with the key check when given it", async () => {
    const limit = createCheckLimit(2);
    const keyCheck = createUpstreamKeyCheck({ probe: async () => [], ttlMs: 1_000, checksPerSecond: 2, limit });
    const access = forward({ limit });
    await keyCheck.check('key-a');
    await keyCheck.check('key-b');
    expect(await access.mayRead(credential('key-a'), 'a', 'ta1')).toBe(false);
    expect(upstream.asked).toHaveLength(0);
    await expect(keyCheck.check('key-ab')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
  });
});

describe('in forward mode, the default account', () => {
  it('is judged per transaction, once per key and transaction in a period', async () => {
    const access = forward();
    expect(access.judgesEachTransaction('')).toBe(true);
    expect(access.judgesEachTransaction('a')).toBe(false);
    expect(await access.mayRead(credential('key-plain'), '', 'tp1')).toBe(true);
    // Another account's webhook that came in on the plain path.
    expect(await access.mayRead(credential('key-plain'), '', 'tp2')).toBe(false);
    expect(await access.mayRead(credential('key-b'), '', 'tp2')).toBe(true);
    expect(await access.mayRead(credential('key-plain'), '', 'tp1')).toBe(true);
    expect(await access.mayRead(credential('key-plain'), '', 'tp2')).toBe(false);
    expect(upstream.asked).toEqual([
      ['key-plain', 'tp1'],
      ['key-plain', 'tp2'],
      ['key-b', 'tp2'],
    ]);
    vi.advanceTimersByTime(1_000);
    expect(await access.mayRead(credential('key-plain'), '', 'tp1')).toBe(true);
    expect(upstream.asked).toHaveLength(4);
  });

  it('is not one of the accounts a transaction is noted for', async () => {
    const access = forward();
    access.note('', 'tp1');
    expect(await access.historyAccount(credential('key-plain'))).toBe('');
    expect(upstream.asked).toEqual([]);
  });
});

describe('in forward mode, the history a key reads', () => {
  it('is the first noted account, in name order, whose latest transaction the key may read; else the default account', async () => {
    const access = forward();
    access.note('b', 'tb1');
    access.note('a', 'ta1');
    access.note('a', 'ta2');
    expect(await access.historyAccount(credential('key-b'))).toBe('b');
    expect(upstream.asked).toEqual([
      ['key-b', 'ta2'],
      ['key-b', 'tb1'],
    ]);
    expect(await access.historyAccount(credential('key-ab'))).toBe('a');
    expect(await access.historyAccount(credential('key-plain'))).toBe('');
    // The same verdicts answer live events: no more calls.
    expect(await access.mayRead(credential('key-b'), 'b', 'tb1')).toBe(true);
    expect(await access.historyAccount(credential('key-b'))).toBe('b');
    expect(upstream.asked).toHaveLength(5);
  });

  it('skips an account the service gave no verdict on, for now', async () => {
    const access = forward();
    access.note('a', 'ta1');
    upstream.state.failing = new GatewayError('UPSTREAM_UNAVAILABLE', 'Upstream is unreachable (ECONNREFUSED)');
    expect(await access.historyAccount(credential('key-a'))).toBe('');
    upstream.state.failing = undefined;
    expect(await access.historyAccount(credential('key-a'))).toBe('a');
  });

  it('comes from a bounded number of accounts, the least recently noted forgotten first', async () => {
    const access = forward({}, { maxAccounts: 2 });
    access.note('a', 'ta1');
    access.note('b', 'tb1');
    access.note('c', 'tc1');
    expect(await access.historyAccount(credential('key-a'))).toBe('');
    expect(await access.historyAccount(credential('key-b'))).toBe('b');
  });
});

describe("in forward mode, an account's path that carries several accounts' webhooks", () => {
  it(
    'is found when a renewed verdict reads one of its transactions and not another, ' + 'and is judged per transaction from then on',
    async () => {
      const told: string[] = [];
      const access = forward({}, { onMixedPath: (account) => told.push(account) });
      // tb1 came in on account a's path: the service sends account b's webhooks there too.
      expect(await access.mayRead(credential('key-a'), 'a', 'ta1')).toBe(true);
      expect(access.judgesEachTransaction('a')).toBe(false);
      await vi.advanceTimersByTimeAsync(1_001);
      // The renewal asks about the path's latest transaction: key-a may not read it (404), though it read ta1.
      expect(await access.mayRead(credential('key-a'), 'a', 'tb1')).toBe(false);
      expect(told).toEqual(['a']);
      expect(access.judgesEachTransaction('a')).toBe(true);
      // Each transaction on its own now: key-a gets its own, key-b its own, from the same path.
      expect(await access.mayRead(credential('key-a'), 'a', 'ta2')).toBe(true);
      expect(await access.mayRead(credential('key-b'), 'a', 'tb1')).toBe(true);
      expect(await access.mayRead(credential('key-b'), 'a', 'ta2')).toBe(false);
    },
  );

  it('is not found by a key the service stopped accepting (401 says nothing of the path)', async () => {
    const told: string[] = [];
    const access = forward({}, { onMixedPath: (account) => told.push(account) });
    expect(await access.mayRead(credential('key-a'), 'a', 'ta1')).toBe(true);
    upstream.state.keys.delete('key-a');
    await vi.advanceTimersByTimeAsync(1_001);
    expect(await access.mayRead(credential('key-a'), 'a', 'ta2')).toBe(false);
    expect(told).toEqual([]);
    expect(access.judgesEachTransaction('a')).toBe(false);
  });
});
