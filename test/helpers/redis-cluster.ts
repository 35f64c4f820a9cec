import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ask, freePortWith, infoField, redisProcess, scratchDirectory, waitForAsync, type RedisProcess } from './redis-process.js';

/*
 * A real Redis Cluster of the test's own: `masters` masters with
 * `replicasPerMaster` replicas each (redis-cli --cluster create), on free
 * ports, no persistence, a short node timeout so that a killed master's
 * replica takes over within seconds. Stopped (every process killed, its
 * files removed) by close().
 */

export interface TestRedisCluster {
  nodes: RedisProcess[];
  /** `host:port,…` of every node, as REDIS_CLUSTER_NODES takes them. */
  seeds: string;
  /** The node that is master of `key`'s slot now, as the live nodes see it. */
  masterOf(key: string): Promise<RedisProcess>;
  /** The port of `master`'s (first) replica, as the master says. */
  replicaPortOf(master: RedisProcess): Promise<number>;
  /** Resolves once every live node says cluster_state:ok, every slot has a live master and every replica is in sync. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** A client of the whole cluster (closed by close()). */
  client(): Cluster;
  close(): Promise<void>;
}

type Cluster = import('ioredis').Cluster;

export interface TestRedisClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** cluster-node-timeout: how long a master may be silent before its replica takes over. */
  nodeTimeoutMs?: number;
}

/**
 * Whether the cluster of the nodes on `livePorts` (127.0.0.1) is whole: every
 * one says cluster_state:ok with every slot served, every replica's link to
 * its master is up, and every slot's master is one of them, as each sees it.
 * The bench's cluster (bench/lib/redis-deployments.ts) waits on it too.
 */
export async function clusterHealthy(livePorts: readonly number[]): Promise<boolean> {
  for (const port of livePorts) {
    const ok = await ask(port, async (client) => {
      const info = String(await client.cluster('INFO'));
      if (infoField(info, 'cluster_state') !== 'ok' || infoField(info, 'cluster_slots_ok') !== '16384') return false;
      const replication = await client.info('replication');
      return infoField(replication, 'role') === 'master' || infoField(replication, 'master_link_status') === 'up';
    });
    if (!ok) return false;
  }
  const live = new Set(livePorts);
  for (const port of livePorts) {
    const slots = (await ask(port, (client) => client.cluster('SLOTS'))) as unknown as Array<[number, number, [string, number]]>;
    if (slots.some(([, , [, master]]) => !live.has(master))) return false;
  }
  return true;
}

export async function startTestRedisCluster(options: TestRedisClusterOptions = {}): Promise<TestRedisCluster> {
  // A node silent for 2 s is failed over: short for a test, long enough that a busy machine does not fail over healthy nodes.
  const { masters = 3, replicasPerMaster = 1, nodeTimeoutMs = 2_000 } = options;
  const scratch = scratchDirectory('cluster');
  const nodes: RedisProcess[] = [];
  const clients: Cluster[] = [];
  const close = async () => {
    for (const client of clients) client.disconnect();
    await Promise.all(nodes.map((node) => node.kill()));
    scratch.remove();
  };
  try {
    for (let index = 0; index < masters * (1 + replicasPerMaster); index++) {
      const port = await freePortWith(10_000);
      const args = [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(scratch.path, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
        '--dir',
        scratch.path,
      ];
      nodes.push(redisProcess(port, args));
    }
    await Promise.all(nodes.map((node) => node.start()));
    const create = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
  } catch (error) {
    await close();
    throw error;
  }

  const healthy = () => clusterHealthy(nodes.filter((node) => node.running()).map((node) => node.port));

  const cluster: TestRedisCluster = {
    nodes,
    seeds: nodes.map((node) => `127.0.0.1:${node.port}`).join(','),
    async masterOf(key) {
      const live = nodes.find((node) => node.running())!;
      const slot = await ask(live.port, (client) => client.cluster('KEYSLOT', key));
      const slots = (await ask(live.port, (client) => client.cluster('SLOTS'))) as unknown as Array<[number, number, [string, number]]>;
      const owner = slots.find(([from, to]) => slot >= from && slot <= to);
      const node = nodes.find((candidate) => candidate.port === owner?.[2][1]);
      if (!node) throw new Error(`no node holds slot ${slot}`);
      return node;
    },
    async replicaPortOf(master) {
      const replication = await ask(master.port, (client) => client.info('replication'));
      return Number(/slave0:ip=[^,]+,port=(\d+)/.exec(replication)?.[1]);
    },
    async waitHealthy(timeoutMs = 60_000) {
      if (!(await waitForAsync(healthy, timeoutMs, 100))) throw new Error('the test cluster did not become healthy');
    },
    client() {
      const client = new Redis.Cluster(
        nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
        { redisOptions: { commandTimeout: 2_000 } },
      );
      client.on('error', () => {});
      clients.push(client);
      return client;
    },
    close,
  };
  try {
    await cluster.waitHealthy();
  } catch (error) {
    await close();
    throw error;
  }
  return cluster;
}
