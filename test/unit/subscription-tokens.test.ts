import { describe, expect, it } from 'vitest';
import { keyIdentity } from '../../src/auth/permissions.js';
import { createSubscriptionTokens, memoryTokenStore, streamTokenOf, type TokenStore } from '../../src/auth/subscription-tokens.js';
import { ErrorCode, GatewayError } from '../../src/errors.js';

/* What a subscription token stands for, what its store holds, and which requests may present one. */

const KEY = 'dash-key-1';
const credential = { authorization: KEY, identity: keyIdentity(KEY, ['read', 'subscribe'], 'acme') };

/** A store that remembers every value written, as a Redis dump would. */
function recordingStore(): TokenStore & { written: string[] } {
  const inner = memoryTokenStore();
  const written: string[] = [];
  return { written, put: (id, value, ttl) => (written.push(id, value), inner.put(id, value, ttl)), take: (id) => inner.take(id) };
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'none',
    (error: unknown) => (error instanceof GatewayError ? error.code : String(error)),
  );

describe('subscription tokens', () => {
  it('stand for the key, its identity and account, with `subscribe` only, once', async () => {
    const store = recordingStore();
    const tokens = createSubscriptionTokens({ store, ttlMs: 60_000, prefix: 'vg:' });
    const { token } = await tokens.mint(credential);
    const redeemed = await tokens.redeem(token);
    expect(redeemed.authorization).toBe(KEY);
    expect(redeemed.identity).toMatchObject({ id: credential.identity.id, account: 'acme' });
    expect([...redeemed.identity.permissions]).toEqual(['subscribe']);
    expect(await codeOf(tokens.redeem(token))).toBe(ErrorCode.UNAUTHENTICATED);
    // The store holds neither the token nor the key it stands for.
    expect(store.written.join(' ')).not.toContain(token.slice(5));
    expect(store.written.join(' ')).not.toContain(KEY);
    expect(store.written[0]).toMatch(/^vg:subscription-token:[0-9a-f]{64}$/);
  });

  it('are minted only for a credential that may subscribe', async () => {
    const tokens = createSubscriptionTokens({ store: memoryTokenStore(), ttlMs: 60_000 });
    expect(await codeOf(tokens.mint({ authorization: 'r', identity: keyIdentity('r', ['read']) }))).toBe(ErrorCode.FORBIDDEN);
  });

  it('expire, and never outlive the JWT they were minted with', async () => {
    let now = 1_000_000;
    const tokens = createSubscriptionTokens({ store: memoryTokenStore(() => now), ttlMs: 60_000 });
    const { token } = await tokens.mint(credential);
    now += 60_001;
    expect(await codeOf(tokens.redeem(token))).toBe(ErrorCode.UNAUTHENTICATED);
    const jwt = { authorization: 'Bearer a.b.c', identity: { ...credential.identity, expiresAt: Date.now() + 5_000 } };
    expect((await createSubscriptionTokens({ store: memoryTokenStore(), ttlMs: 60_000 }).mint(jwt)).expiresAt).toBe(jwt.identity.expiresAt);
  });

  it('say what happened when their store does not answer', async () => {
    const away: TokenStore = {
      put: () => Promise.reject(new Error('ECONNREFUSED')),
      take: () => Promise.reject(new Error('ECONNREFUSED')),
    };
    const tokens = createSubscriptionTokens({ store: away, ttlMs: 60_000 });
    expect(await codeOf(tokens.mint(credential))).toBe(ErrorCode.UPSTREAM_UNAVAILABLE);
    expect(await codeOf(tokens.redeem(`vgst_${'A'.repeat(43)}`))).toBe(ErrorCode.UPSTREAM_UNAVAILABLE);
  });

  it('are read only from an SSE GET that carries no key', () => {
    const sse = { method: 'GET', url: '/graphql?query=x&token=vgst_t', headers: { accept: 'text/event-stream' } };
    expect(streamTokenOf(sse)).toBe('vgst_t');
    expect(streamTokenOf({ ...sse, method: 'POST' })).toBeUndefined();
    expect(streamTokenOf({ ...sse, headers: { accept: 'application/json' } })).toBeUndefined();
    expect(streamTokenOf({ ...sse, headers: { ...sse.headers, authorization: KEY } })).toBeUndefined();
    expect(streamTokenOf({ ...sse, url: '/graphql?query=x' })).toBeUndefined();
  });

  it('in memory, hold at most their bound and forget the expired first', async () => {
    let now = 0;
    const store = memoryTokenStore(() => now);
    for (let n = 0; n < 10_001; n++) await store.put(`t${n}`, 'v', 1_000);
    expect(await store.take('t0')).toBeUndefined();
    expect(await store.take('t10000')).toBe('v');
    now = 2_000;
    expect(await store.take('t5')).toBeUndefined();
  });
});
