import { describe, expect, it } from 'vitest';
import { ConfigError, hashTagOf, loadConfig } from '../../src/config/config.js';
import { redisKeys } from '../../src/redis/redis-keys.js';

/* Which Redis the variables name (src/config/redis-target.ts), and the keys under REDIS_PREFIX (src/redis/redis-keys.ts). */

function errorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('loadConfig accepted it');
}

describe.concurrent('REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS', () => {
  it('reads one server, a cluster or a Sentinel group, with credentials and TLS from the entries', () => {
    expect(loadConfig({}).redis).toBeUndefined();
    expect(loadConfig({ REDIS_URL: 'redis://h:1' }).redis).toEqual({ kind: 'standalone', url: 'redis://h:1' });
    expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, [::1]:7001,rediss://app:p%40ss@node.example:7002' }).redis).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
        { host: 'node.example', port: 7002 },
      ],
      access: { username: 'app', password: 'p@ss', tls: true },
    });
    expect(
      loadConfig({ REDIS_SENTINELS: 'redis://:s-pass@s1:26379,s2:26379', REDIS_SENTINEL_MASTER: 'rediss://:d-pass@mymaster' }).redis,
    ).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      sentinelAccess: { username: undefined, password: 's-pass', tls: false },
      name: 'mymaster',
      access: { username: undefined, password: 'd-pass', tls: true },
    });
  });

  it('refuses two at once, a group without its master (or the reverse), and bad entries, never repeating a password', () => {
    expect(errorOf({ REDIS_URL: 'redis://h:1', REDIS_CLUSTER_NODES: 'h:2' })).toMatch(
      /^REDIS_CLUSTER_NODES must be unset when REDIS_URL is set/,
    );
    expect(errorOf({ REDIS_CLUSTER_NODES: 'h:2', REDIS_SENTINELS: 'h:3', REDIS_SENTINEL_MASTER: 'm' })).toMatch(
      /^REDIS_SENTINELS must be unset when REDIS_URL or REDIS_CLUSTER_NODES is set/,
    );
    expect(errorOf({ REDIS_SENTINELS: 'h:3' })).toBe('REDIS_SENTINEL_MASTER must be set when REDIS_SENTINELS is set');
    expect(errorOf({ REDIS_SENTINEL_MASTER: 'm' })).toBe('REDIS_SENTINELS must be set when REDIS_SENTINEL_MASTER is set');
    const bad = errorOf({ REDIS_CLUSTER_NODES: 'h:1,secret-host' });
    expect(bad).toMatch(/^REDIS_CLUSTER_NODES must be .*; entry 2 of 2: an entry must be host:port/);
    expect(bad).not.toContain('secret-host');
    const differ = errorOf({ REDIS_CLUSTER_NODES: 'redis://:one@h:1,redis://:two@h:2' });
    expect(differ).toMatch(/must all name the same/);
    expect(differ).not.toMatch(/one|two@/);
    expect(errorOf({ REDIS_SENTINELS: 'h:1', REDIS_SENTINEL_MASTER: 'redis://:pw@my master' })).not.toContain('pw');
    expect(errorOf({ REDIS_PREFIX: 'app{}:' })).toMatch(/^REDIS_PREFIX must be any text, got "app\{\}:"; an empty \{\}/);
  });

  it('names retired variables still set, to be said at start', () => {
    expect(loadConfig({ MAX_ALIASES: '10' }).retiredVariables.map(({ name }) => name)).toEqual(['MAX_ALIASES']);
    expect(loadConfig({ MAX_ALIASES: '10' }).limits.maxAliases).toBe(50);
    expect(loadConfig({}).retiredVariables).toEqual([]);
  });
});

describe.concurrent('the Redis keys', () => {
  it("puts the event log's keys in the slot of {events}, and leaves rate-limit keys untagged", () => {
    const keys = redisKeys('vending-gateway:');
    const logKeys = [
      keys.stream,
      keys.historyQueue,
      keys.writeProbe,
      keys.eventPosition('e1', undefined),
      keys.dedupe('e1', 'acct-a'),
      keys.lastDigest('tx', undefined),
    ];
    expect(logKeys.map(hashTagOf)).toEqual(logKeys.map(() => 'events'));
    expect(keys.stream).toBe('vending-gateway:{events}');
    expect(keys.dedupe('e1', 'acct-a')).toBe('vending-gateway:{events}:dedupe@acct-a:e1');
    expect(hashTagOf(`${keys.rateLimitPrefix}:abc`)).toBeUndefined();
    expect(keys.untagged?.stream).toBe('vending-gateway:events');
  });

  it("keeps every key in the prefix's own tag when it has one, under the names of before", () => {
    const keys = redisKeys('app{vg}:');
    expect([keys.stream, keys.dedupe('e1', undefined), `${keys.rateLimitPrefix}:x`].map(hashTagOf)).toEqual(['vg', 'vg', 'vg']);
    expect(keys.stream).toBe('app{vg}:events');
    expect(keys.untagged).toBeUndefined();
  });
});
