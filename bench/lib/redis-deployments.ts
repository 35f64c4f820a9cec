import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { clusterHealthy } from '../../test/helpers/redis-cluster.js';
import { waitForAsync } from '../../test/helpers/redis-process.js';
import { freePort, spawnNode, type Child } from './children.js';

export type RedisKind = 'single' | 'replica' | 'cluster';
export const REDIS_KINDS: readonly RedisKind[] = ['single', 'replica', 'cluster'];

export interface RedisDeployment {
  kind: RedisKind;
  /** The gateway's variables naming it, with a key prefix of its own for `label`. */
  env(label: string): Record<string, string>;
  serverCpuSeconds(): Promise<number[]>;
  stop(): Promise<void>;
}

interface RedisChild extends Child {
  redisUrl: string;
  /** Redis's CPU seconds (user + system) as INFO reports them: cpuSeconds() is the wrapper process's, not the server's. */
  serverCpuSeconds(): Promise<number>;
}

function client(url: string): Redis {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  return redis;
}

async function redisInfo(url: string, section: string): Promise<Map<string, string>> {
  const redis = client(url);
  try {
    await redis.connect();
    const lines = (await redis.info(section)).split('\r\n').filter((l) => l.includes(':'));
    return new Map(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]));
  } finally {
    redis.disconnect();
  }
}

/** One redis-server held by a Node child (redis-main.ts); `args`: a replica's `--replicaof`, a cluster node's options. */
async function startRedis(args: string[] = []): Promise<RedisChild> {
  const toRedis = (httpUrl: string) => httpUrl.replace(/^http:/, 'redis:');
  const child = await spawnNode({
    name: 'redis-server',
    entry: 'bench/lib/redis-main.ts',
    args,
    async ready(url) {
      const redis = client(toRedis(url));
      try {
        await redis.connect();
        return (await redis.ping()) === 'PONG';
      } finally {
        redis.disconnect();
      }
    },
  });
  const redisUrl = toRedis(child.url);
  return {
    ...child,
    redisUrl,
    async serverCpuSeconds() {
      const cpu = await redisInfo(redisUrl, 'cpu');
      return Number(cpu.get('used_cpu_user')) + Number(cpu.get('used_cpu_sys'));
    },
  };
}

const stopAll = (servers: RedisChild[]) => Promise.all(servers.map((server) => server.stop())).then(() => undefined);

function deployment(kind: RedisKind, servers: RedisChild[], env: (prefix: string) => Record<string, string>): RedisDeployment {
  return {
    kind,
    env: (label) => env(`bench-${label}-${randomUUID().slice(0, 8)}:`),
    serverCpuSeconds: () => Promise.all(servers.map((server) => server.serverCpuSeconds())),
    stop: () => stopAll(servers),
  };
}

/** Starts `start`'s servers; if one fails, those started are stopped before the error goes on. */
async function starting(servers: RedisChild[], start: () => Promise<void>): Promise<void> {
  try {
    await start();
  } catch (error) {
    await stopAll(servers);
    throw error;
  }
}

async function single(): Promise<RedisDeployment> {
  const redis = await startRedis();
  return deployment('single', [redis], (prefix) => ({ REDIS_URL: redis.redisUrl, REDIS_PREFIX: prefix }));
}

async function withReplica(): Promise<RedisDeployment> {
  const servers: RedisChild[] = [];
  await starting(servers, async () => {
    const master = await startRedis();
    servers.push(master);
    servers.push(await startRedis(['--replicaof', '127.0.0.1', String(master.port)]));
    // The gateway waits for replicas only once the master counts one (ROLE): measured turns must not begin before.
    const synced = await waitForAsync(
      async () => (await redisInfo(master.redisUrl, 'replication')).get('slave0')?.includes('state=online') === true,
      30_000,
      100,
    );
    if (!synced) throw new Error("the bench's Redis replica did not come online within 30 s");
  });
  const master = servers[0]!;
  return deployment('replica', servers, (prefix) => ({ REDIS_URL: master.redisUrl, REDIS_PREFIX: prefix }));
}

async function cluster(masters = 3): Promise<RedisDeployment> {
  const servers: RedisChild[] = [];
  await starting(servers, async () => {
    for (let index = 0; index < masters * 2; index++) {
      // Its nodes.conf in the server's own directory (redis-main.ts); the bus port named, not the port + 10000, which may be taken.
      servers.push(
        await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(await freePort())]),
      );
    }
    const addresses = servers.map((server) => `127.0.0.1:${server.port}`);
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    if (!(await waitForAsync(() => clusterHealthy(servers.map((server) => server.port)), 60_000, 200)))
      throw new Error("the bench's Redis Cluster did not become healthy within 60 s");
  });
  const seeds = servers.map((server) => `127.0.0.1:${server.port}`).join(',');
  return deployment('cluster', servers, (prefix) => ({ REDIS_CLUSTER_NODES: seeds, REDIS_PREFIX: prefix }));
}

export function startRedisDeployment(kind: RedisKind): Promise<RedisDeployment> {
  return kind === 'single' ? single() : kind === 'replica' ? withReplica() : cluster();
}

export function redisKindsFrom(value: string | undefined): RedisKind[] {
  const text = (value ?? 'all').trim().toLowerCase();
  if (text === 'all' || text === 'on' || text === '') return [...REDIS_KINDS];
  if (text === 'off') return [];
  const asked = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  const unknown = asked.filter((part) => !REDIS_KINDS.includes(part as RedisKind));
  if (unknown.length > 0)
    throw new Error(`BENCH_S5_REDIS: unknown ${unknown.join(', ')}; use off, all, or some of ${REDIS_KINDS.join(',')}`);
  return REDIS_KINDS.filter((kind) => asked.includes(kind));
}
