import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { clusterHealthy } from '../../test/helpers/redis-cluster.js';
import { waitForAsync } from '../../test/helpers/redis-process.js';
import { freePort, spawnNode } from './children.js';

export type RedisKind = 'single' | 'replica' | 'cluster';
export const REDIS_KINDS: readonly RedisKind[] = ['single', 'replica', 'cluster'];

type RedisChild = Awaited<ReturnType<typeof startRedis>>;

async function redisInfo(url: string, section: string): Promise<Map<string, string>> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const lines = (await redis.info(section)).split('\r\n').filter((l) => l.includes(':'));
    return new Map(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]));
  } finally {
    redis.disconnect();
  }
}

/** One redis-server held by a Node child (redis-main.ts); `args`: a replica's `--replicaof`, a cluster node's options. */
async function startRedis(args: string[] = []) {
  const toRedis = (httpUrl: string) => httpUrl.replace(/^http:/, 'redis:');
  // Ready once it answers INFO.
  const ready = async (url: string) => (await redisInfo(toRedis(url), 'server')).size > 0;
  const child = await spawnNode({ name: 'redis-server', entry: 'bench/lib/redis-main.ts', args, ready });
  const redisUrl = toRedis(child.url);
  return {
    ...child,
    redisUrl,
    /** Redis's CPU seconds (user + system) as INFO reports them: cpuSeconds() is the wrapper process's, not the server's. */
    async serverCpuSeconds() {
      const cpu = await redisInfo(redisUrl, 'cpu');
      return Number(cpu.get('used_cpu_user')) + Number(cpu.get('used_cpu_sys'));
    },
  };
}

/** One server, a master with a replica, or a cluster of 3 masters with a replica each; each gateway under a key prefix of its own. */
export async function startRedisDeployment(kind: RedisKind) {
  const servers: RedisChild[] = [];
  const stop = () => Promise.all(servers.map((server) => server.stop())).then(() => undefined);
  try {
    servers.push(await startRedis(kind === 'cluster' ? clusterNode(await freePort()) : []));
    if (kind === 'replica') {
      servers.push(await startRedis(['--replicaof', '127.0.0.1', String(servers[0]!.port)]));
      // The gateway waits for replicas only once the master counts one (ROLE): measured turns must not begin before.
      const online = async () => (await redisInfo(servers[0]!.redisUrl, 'replication')).get('slave0')?.includes('state=online') === true;
      if (!(await waitForAsync(online, 30_000, 100))) throw new Error("the bench's Redis replica did not come online within 30 s");
    }
    if (kind === 'cluster') {
      while (servers.length < 6) servers.push(await startRedis(clusterNode(await freePort())));
      const addresses = servers.map((server) => `127.0.0.1:${server.port}`);
      const create = spawnSync('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
      if (!(await waitForAsync(() => clusterHealthy(servers.map((server) => server.port)), 60_000, 200)))
        throw new Error("the bench's Redis Cluster did not become healthy within 60 s");
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const seeds = servers.map((server) => `127.0.0.1:${server.port}`).join(',');
  const names: Record<string, string> = kind === 'cluster' ? { REDIS_CLUSTER_NODES: seeds } : { REDIS_URL: servers[0]!.redisUrl };
  return {
    kind,
    /** The gateway's variables naming it, with a key prefix of its own for `label`. */
    env: (label: string) => ({ ...names, REDIS_PREFIX: `bench-${label}-${randomUUID().slice(0, 8)}:` }),
    serverCpuSeconds: () => Promise.all(servers.map((server) => server.serverCpuSeconds())),
    stop,
  };
}
export type RedisDeployment = Awaited<ReturnType<typeof startRedisDeployment>>;

/** A cluster node's options: its nodes.conf in the server's own directory (redis-main.ts), its bus port named (port + 10000 may be taken). */
const clusterNode = (busPort: number) => [
  '--cluster-enabled',
  'yes',
  '--cluster-config-file',
  'nodes.conf',
  '--cluster-port',
  String(busPort),
];

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
