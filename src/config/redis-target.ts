/*
 * Which Redis a deployment shares, as the variables name it: one server
 * (REDIS_URL), a Redis Cluster (REDIS_CLUSTER_NODES) or a Sentinel group
 * (REDIS_SENTINELS + REDIS_SENTINEL_MASTER). Entries are `host:port`, or
 * `redis://` / `rediss://` addresses that carry credentials and TLS, so a
 * managed service needs no variable of its own for its passwords. Pure: the
 * config reader uses it, and no problem it words repeats any part of an entry
 * (an entry may hold a password).
 */

/** Credentials and TLS for the connections to one kind of node. */
export interface RedisAccess {
  username?: string | undefined;
  password?: string | undefined;
  /** `rediss://`: connect with TLS (Node's defaults: the server's certificate is checked). */
  tls: boolean;
}

export interface RedisNode extends RedisAccess {
  host: string;
  port: number;
}

export type RedisTarget =
  | { kind: 'standalone'; url: string }
  | { kind: 'cluster'; nodes: Array<{ host: string; port: number }>; access: RedisAccess }
  | { kind: 'sentinel'; sentinels: Array<{ host: string; port: number }>; sentinelAccess: RedisAccess; name: string; access: RedisAccess };

const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/;

/** `host:port` or `redis[s]://[user:password@]host:port`, or what is wrong with it. */
export function parseRedisNode(entry: string): RedisNode | string {
  if (!/^rediss?:\/\//.test(entry)) {
    const match = HOST_PORT.exec(entry);
    if (!match || Number(match[2]) < 1 || Number(match[2]) > 65_535)
      return 'an entry must be host:port (port 1 to 65535) or a redis:// or rediss:// address';
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]), tls: false };
  }
  if (!URL.canParse(entry)) return 'an address must be redis://[user:password@]host:port';
  const url = new URL(entry);
  if (!url.hostname || !url.port) return 'an address must name its host and port';
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port), ...accessOf(url) };
}

function accessOf(url: URL): RedisAccess {
  return {
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    tls: url.protocol === 'rediss:',
  };
}

/** The master's name, alone or as `redis[s]://[user:password@]name` (the data nodes' credentials and TLS), or what is wrong with it. */
export function parseSentinelMaster(value: string): { name: string; access: RedisAccess } | string {
  if (!/^rediss?:\/\//.test(value))
    return /^[A-Za-z0-9._-]+$/.test(value)
      ? { name: value, access: { tls: false } }
      : 'the name holds only letters, digits, ".", "_" and "-"';
  if (!URL.canParse(value)) return 'an address must be redis://[user:password@]name';
  const url = new URL(value);
  if (!/^[A-Za-z0-9._-]+$/.test(url.hostname) || url.port || (url.pathname !== '' && url.pathname !== '/'))
    return "an address must be redis://[user:password@]name, the master's name where a host would be";
  return { name: url.hostname, access: accessOf(url) };
}

/**
 * The nodes, and the access they share: ioredis gives every node of a cluster
 * (and every sentinel) the same options, so entries that name credentials or
 * TLS must agree; the first entry that names any gives them.
 */
function shared(entries: readonly string[]): { nodes: Array<{ host: string; port: number }>; access: RedisAccess } {
  const parsed = entries.map((entry) => parseRedisNode(entry) as RedisNode);
  const named = parsed.find((node) => node.username !== undefined || node.password !== undefined || node.tls);
  return {
    nodes: parsed.map(({ host, port }) => ({ host, port })),
    access: named ? { username: named.username, password: named.password, tls: named.tls } : { tls: false },
  };
}

/** What is wrong with a list of entries taken together (entries that disagree on credentials or TLS). */
export function nodesProblem(entries: readonly string[]): string | undefined {
  const parsed = entries.map(parseRedisNode).filter((node): node is RedisNode => typeof node !== 'string');
  const named = parsed.filter((node) => node.username !== undefined || node.password !== undefined || node.tls);
  const first = named[0];
  const differs = named.some((node) => node.username !== first?.username || node.password !== first?.password || node.tls !== first?.tls);
  return differs ? 'the entries that name credentials or TLS must all name the same (every node gets the same)' : undefined;
}

export interface RedisTargetValues {
  REDIS_URL: string | undefined;
  REDIS_CLUSTER_NODES: string[];
  REDIS_SENTINELS: string[];
  REDIS_SENTINEL_MASTER: string | undefined;
}

/** The deployment the variables name (requirements.ts made sure they name at most one); undefined: no Redis. */
export function redisTarget(v: RedisTargetValues): RedisTarget | undefined {
  if (v.REDIS_URL !== undefined) return { kind: 'standalone', url: v.REDIS_URL };
  if (v.REDIS_CLUSTER_NODES.length > 0) return { kind: 'cluster', ...shared(v.REDIS_CLUSTER_NODES) };
  if (v.REDIS_SENTINELS.length > 0 && v.REDIS_SENTINEL_MASTER !== undefined) {
    const master = parseSentinelMaster(v.REDIS_SENTINEL_MASTER);
    if (typeof master === 'string') throw new Error('REDIS_SENTINEL_MASTER was read without being checked');
    const { nodes, access } = shared(v.REDIS_SENTINELS);
    return { kind: 'sentinel', sentinels: nodes, sentinelAccess: access, name: master.name, access: master.access };
  }
  return undefined;
}

/**
 * The part of a key Redis Cluster hashes (its hash tag): what lies between the
 * first `{` and the first `}` after it, when that is not empty; undefined when
 * the whole key is hashed.
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** A REDIS_PREFIX whose first `{` closes at once (`{}`) would leave the event log's keys in different cluster slots. */
export const prefixProblem = (prefix: string): string | undefined =>
  prefix.includes('{') && hashTagOf(prefix) === undefined && prefix.indexOf('}', prefix.indexOf('{')) === prefix.indexOf('{') + 1
    ? 'an empty {} before any {tag} would spread the event log over several cluster slots'
    : undefined;
