import { describe, expect, it } from 'vitest';
import { ConfigError, DEVELOPMENT_API_KEY, loadConfig } from '../../src/config/config.js';

describe.concurrent('loadConfig', () => {
  it('has the documented defaults and a development key', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 4000, host: '127.0.0.1', backend: 'memory', production: false, upstream: undefined });
    expect(config.productsValues).toEqual({ flat: 'flat', planogram: 'planogram' });
    expect(config.devApiKey).toBe(DEVELOPMENT_API_KEY);
    expect(config.apiKeys).toEqual([{ key: DEVELOPMENT_API_KEY, permissions: ['read', 'subscribe', 'pay'] }]);
  });

  it('reads API_KEYS as a comma-separated list and makes no development key then', () => {
    const config = loadConfig({ API_KEYS: ' a , b,,c ' });
    expect(config.apiKeys.map((entry) => entry.key)).toEqual(['a', 'b', 'c']);
    expect(config.devApiKey).toBeUndefined();
  });

  it("reads each key's permissions after its last colon; a key without them has all three", () => {
    const config = loadConfig({ API_KEYS: 'dash:read+subscribe, till : pay ,plain,a:b:read' });
    expect(config.apiKeys).toEqual([
      { key: 'dash', permissions: ['read', 'subscribe'] },
      { key: 'till', permissions: ['pay'] },
      { key: 'plain', permissions: ['read', 'subscribe', 'pay'] },
      { key: 'a:b', permissions: ['read'] },
    ]);
    for (const bad of ['k:read+admin', 'k:', ':read', 'k:read+']) {
      expect(() => loadConfig({ API_KEYS: bad }), bad).toThrow(/^API_KEYS must be comma-separated keys, each alone/);
    }
  });

  it('takes a key file or tokens instead of API_KEYS, without the development key, and needs issuer and audience for tokens', () => {
    const withFile = loadConfig({ API_KEYS_FILE: '/etc/keys' });
    expect(withFile.apiKeys).toEqual([]);
    expect(withFile.devApiKey).toBeUndefined();
    expect(() => loadConfig({ NODE_ENV: 'production', API_KEYS_FILE: '/etc/keys', WEBHOOK_UNSIGNED: 'allow' })).not.toThrow();
    expect(() => loadConfig({ JWT_JWKS_URL: 'https://id.example/jwks' })).toThrow(/^JWT_ISSUER must be set when JWT_JWKS_URL is set/);
    expect(() => loadConfig({ JWT_JWKS_URL: 'https://id.example/jwks', JWT_ISSUER: 'i' })).toThrow(
      /^JWT_AUDIENCE must be set when JWT_JWKS_URL is set/,
    );
    const tokens = loadConfig({ JWT_JWKS_URL: 'https://id.example/jwks', JWT_ISSUER: 'i', JWT_AUDIENCE: 'a,b' });
    expect(tokens.jwt).toMatchObject({ issuer: 'i', audience: ['a', 'b'], clockSkewS: 30, permissionsClaim: 'permissions' });
    expect(tokens.jwt?.algorithms).not.toContain('HS256');
    expect(() => loadConfig({ JWT_ALGORITHMS: 'HS256' })).toThrow(/^JWT_ALGORITHMS must be/);
    expect(() => loadConfig({ JWT_ALGORITHMS: 'none' })).toThrow(/^JWT_ALGORITHMS must be/);
    // In forward mode the upstream judges each client's own header: a key file or tokens would be bypassed.
    expect(() => loadConfig({ BACKEND: 'rest', UPSTREAM_URL: 'http://u', API_KEYS_FILE: '/etc/keys' })).toThrow(
      /^UPSTREAM_API_KEY must be set when BACKEND=rest and API_KEYS_FILE or JWT_JWKS_URL is set/,
    );
  });

  it('refuses to start in production without API_KEYS', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/^API_KEYS must be set/);
  });

  const SECRET = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;

  it('refuses to start in production without WEBHOOK_SECRET, in one line naming it', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', API_KEYS: 'k' })).toThrow(
      new ConfigError('WEBHOOK_SECRET', 'set when NODE_ENV=production (or WEBHOOK_UNSIGNED=allow to accept unsigned webhooks)', undefined),
    );
    expect(() => loadConfig({ NODE_ENV: 'production', API_KEYS: 'k', WEBHOOK_UNSIGNED: 'refuse' })).toThrow(/^WEBHOOK_SECRET must be set/);
  });

  it('accepts unsigned webhooks in production only when WEBHOOK_UNSIGNED=allow, and signed ones as ever', () => {
    expect(loadConfig({ NODE_ENV: 'production', API_KEYS: 'k', WEBHOOK_UNSIGNED: 'allow' }).webhookSecrets).toEqual([]);
    expect(loadConfig({ NODE_ENV: 'production', API_KEYS: 'k', WEBHOOK_SECRET: SECRET }).webhookSecrets).toEqual([SECRET]);
    expect(
      loadConfig({ NODE_ENV: 'production', API_KEYS: 'k', WEBHOOK_SECRET: SECRET, WEBHOOK_UNSIGNED: 'refuse' }).webhookSecrets,
    ).toEqual([SECRET]);
  });

  it('accepts unsigned webhooks outside production unless WEBHOOK_UNSIGNED=refuse', () => {
    expect(loadConfig({}).webhookSecrets).toEqual([]);
    expect(() => loadConfig({ WEBHOOK_UNSIGNED: 'refuse' })).toThrow(/^WEBHOOK_SECRET must be set when WEBHOOK_UNSIGNED=refuse$/);
  });

  it.each([
    [{ PORT: 'abc' }, /^PORT must be a whole number from 0 to 65535, got "abc"$/],
    [{ PORT: '70000' }, /^PORT must be/],
    [{ BACKEND: 'graphql' }, /^BACKEND must be one of memory, rest, got "graphql"$/],
    [{ BACKEND: 'rest' }, /^UPSTREAM_URL must be set when BACKEND=rest$/],
    [{ BACKEND: 'rest', UPSTREAM_URL: 'ftp://x' }, /^UPSTREAM_URL must be an http/],
    [{ BACKEND: 'rest', UPSTREAM_URL: 'not a url' }, /^UPSTREAM_URL must be an http/],
    [{ WEBHOOK_SECRET: 'plain' }, /^WEBHOOK_SECRET must be comma-separated Standard Webhooks secrets/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
    [{ WEBHOOK_UNSIGNED: 'yes' }, /^WEBHOOK_UNSIGNED must be one of allow, refuse, got "yes"$/],
  ])('rejects %o with one line naming the variable', (env, message) => {
    let error: unknown;
    try {
      loadConfig(env);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
  });

  it('configures the rest backend, forwarding client keys when UPSTREAM_API_KEY is unset', () => {
    const forward = loadConfig({ BACKEND: 'rest', UPSTREAM_URL: 'http://127.0.0.1:9999/api/' });
    expect(forward.upstream).toMatchObject({ url: 'http://127.0.0.1:9999/api', apiKey: undefined, timeoutMs: 10_000 });
    expect(forward.apiKeys).toEqual([]);
    const service = loadConfig({ BACKEND: 'rest', UPSTREAM_URL: 'http://u', UPSTREAM_API_KEY: 'k', API_KEYS: 'c' });
    expect(service.upstream?.apiKey).toBe('k');
    expect(service.apiKeys.map((entry) => entry.key)).toEqual(['c']);
  });

  it('refuses a VENDING_POLL_MS that would read the whole fleet many times a second, keeping 0 for off', () => {
    for (const fast of ['1', '999'])
      expect(() => loadConfig({ VENDING_POLL_MS: fast }), fast).toThrow(
        /^VENDING_POLL_MS must be 0 \(off\) or a whole number from 1000 to 3600000, got "\d+"$/,
      );
    expect(loadConfig({ VENDING_POLL_MS: '0' }).vendingPollMs).toBe(0);
    expect(loadConfig({ VENDING_POLL_MS: '1000' }).vendingPollMs).toBe(1_000);
  });

  it('says the rule of DEFAULT_CURRENCY once, in one line', () => {
    expect(() => loadConfig({ DEFAULT_CURRENCY: 'EURO' })).toThrow(
      /^DEFAULT_CURRENCY must be an ISO 4217 currency code \(three letters\), got "EURO"$/,
    );
    expect(loadConfig({ DEFAULT_CURRENCY: 'gbp' }).defaultCurrency).toBe('GBP');
  });
});
