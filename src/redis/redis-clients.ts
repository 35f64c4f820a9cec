import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisAccess, RedisTarget } from '../config/index.js';
import type { Logger } from '../logging/logger.js';
import { createWriteHealth } from './write-health.js';

/*
 * The one place that knows which Redis a deployment shares (one server, a
 * Redis Cluster or a Sentinel group): everything else receives RedisClients
 * and runs the same commands on any of them.
 *
 * Two connections per instance: one for commands, which fails fast while
 * Redis is away (a webhook then answers 503 and its sender retries, rather
 * than waiting on a queue nobody can see), and one subscribed to the live
 * event channel, which waits out reconnections. On a cluster the commands go
 * through ioredis' Cluster (each to the master of its key's slot, following
 * MOVED and failovers); the live channel is one node's connection, any node,
 * since a cluster sends every PUBLISH to every node, masters and replicas.
 *
 * A Redis that stops answering without closing its connections (paused,
 * overloaded, a network that drops packets) would otherwise hold every caller
 * for as long as it lasts: every command gives up after `commandTimeoutMs`,
 * and a connection that receives nothing that long after a command is
 * dropped and made again (ioredis `socketTimeout`), so the instance reads as
 * away (not ready, commands refused at once) until Redis answers again. A
 * PING every `commandTimeoutMs` asks on each connection even when nothing
 * else does, so an idle stall is noticed too.
 */

export interface RedisClientsOptions {
  /** Longest wait for any answer; also how often each connection is asked whether Redis still answers (the configuration's `redisCommandTimeoutMs`). */
  commandTimeoutMs: number;
  /** A key in the event log's slot that the instance writes to learn whether it can (redis-keys.ts `writeProbe`). */
  probeKey: string;
  /** Told once when Redis stops taking writes (or cannot be reached), and once when it takes them again. */
  logger?: Logger;
}

export interface RedisClients {
  /** Which kind of deployment the connections reach. */
  topology: RedisTarget['kind'];
  commands: Redis | Cluster;
  /** The connection subscribed to the live channel; always one node's. */
  tail: Redis;
  /** Whether the event log can be written now (write-health.ts): readiness and the webhook's answer follow it. */
  writable(): boolean;
  /** Told of every append to the event log: succeeded (`true`) or failed (its error). */
  noteWrite(outcome: true | { error: unknown }): void;
  /** Resolves true once the event log can be written, false after `timeoutMs`. */
  connected(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const reconnect = (attempt: number) => Math.min(50 * 2 ** attempt, 2_000);

/**
 * A server that answers READONLY is a replica now (a failover demoted it, or
 * the address names a replica): the connection is made again, so a Sentinel
 * group is asked afresh for its master; the command itself fails (its
 * webhook gets 503 and is sent again), never sent to the replica again.
 */
const reconnectOnReadOnly: RedisOptions['reconnectOnError'] = (error) => (error.message.startsWith('READONLY') ? 1 : false);

/** Asks every `everyMs` while the connection is up; an unanswered PING ends the connection through `socketTimeout`. */
function heartbeat(connection: Redis | Cluster, everyMs: number): NodeJS.Timeout {
  const timer = setInterval(() => {
    if (connection.status === 'ready') connection.ping().catch(() => {});
  }, everyMs);
  timer.unref();
  return timer;
}

const accessOptions = (access: RedisAccess): RedisOptions => ({
  ...(access.username !== undefined ? { username: access.username } : {}),
  ...(access.password !== undefined ? { password: access.password } : {}),
  ...(access.tls ? { tls: {} } : {}),
});

// A command whose caller was already told it failed (a webhook answered 503) is not sent again on the next connection.
const FAIL_FAST: RedisOptions = { enableOfflineQueue: false, maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false };
// The event log subscribes again itself on every reconnection, and then reads what went by meanwhile.
const WAIT_OUT: RedisOptions = { maxRetriesPerRequest: null, autoResubscribe: false };

function standalone(url: string, bounded: RedisOptions): { commands: Redis; tail: Redis } {
  return { commands: new Redis(url, { ...bounded, ...FAIL_FAST }), tail: new Redis(url, { ...bounded, ...WAIT_OUT }) };
}

function sentinel(target: Extract<RedisTarget, { kind: 'sentinel' }>, bounded: RedisOptions): { commands: Redis; tail: Redis } {
  const options: RedisOptions = {
    ...bounded,
    ...accessOptions(target.access),
    sentinels: target.sentinels,
    name: target.name,
    // ioredis checks the role of the node it reaches (INFO) and asks the Sentinels again when it is not the master.
    role: 'master',
    // Subscribed to the Sentinels' +switch-master: a failover ends the connection at once, even one to a master that is still up.
    failoverDetector: true,
    enableTLSForSentinelMode: target.access.tls,
    ...(target.sentinelAccess.username !== undefined ? { sentinelUsername: target.sentinelAccess.username } : {}),
    ...(target.sentinelAccess.password !== undefined ? { sentinelPassword: target.sentinelAccess.password } : {}),
    ...(target.sentinelAccess.tls ? { sentinelTLS: {} } : {}),
    sentinelCommandTimeout: bounded.commandTimeout,
    // While every Sentinel is away, asked again at the pace of a lost server, not given up.
    sentinelRetryStrategy: reconnect,
  };
  return { commands: new Redis({ ...options, ...FAIL_FAST }), tail: new Redis({ ...options, ...WAIT_OUT }) };
}

function cluster(target: Extract<RedisTarget, { kind: 'cluster' }>, bounded: RedisOptions, timeoutMs: number): { commands: Cluster; tail: Redis } {
  const access = accessOptions(target.access);
  const options: ClusterOptions = {
    // Commands while the cluster is not connected fail at once, as on one server.
    enableOfflineQueue: false,
    clusterRetryStrategy: reconnect,
    // A node that closed (a master killed), MOVED, CLUSTERDOWN or TRYAGAIN: the slots are asked again and the
    // command tried again shortly, within the command's own deadline; past it the webhook gets 503.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: timeoutMs,
    // Asked now and then even when nothing failed, so an idle instance learns of a promoted replica too.
    slotsRefreshInterval: 5 * timeoutMs,
    // Each node's connection: ioredis' Cluster chooses its reconnection and offline queue itself.
    redisOptions: { ...nodeOptions(bounded), ...access, maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false },
  };
  const commands = new Cluster(target.nodes, options);
  return { commands, tail: clusterTail(commands, target.nodes, { ...bounded, ...access, ...WAIT_OUT }) };
}

function nodeOptions({ retryStrategy: _retry, ...rest }: RedisOptions): NonNullable<ClusterOptions['redisOptions']> {
  return rest;
}

/**
 * The live channel on a cluster: one connection to one node; when it closes
 * (that node died) the next attempt goes to the next node the cluster knows
 * (the seeds until it knows any), so the channel comes back whichever node
 * is lost, and the event log fills the gap as after any reconnection.
 */
function clusterTail(commands: Cluster, seeds: ReadonlyArray<{ host: string; port: number }>, options: RedisOptions): Redis {
  const first = seeds[0]!;
  const tail = new Redis({ ...options, host: first.host, port: first.port });
  let turn = 0;
  tail.on('close', () => {
    const known = commands
      .nodes('all')
      .map(({ options: { host, port } }) => ({ host, port }))
      .filter((node): node is { host: string; port: number } => node.host !== undefined && node.port !== undefined);
    const candidates = known.length > 0 ? known : seeds;
    turn = (turn + 1) % candidates.length;
    const next = candidates[turn]!;
    // ioredis reads host and port from its options on every attempt (StandaloneConnector keeps this very object).
    tail.options.host = next.host;
    tail.options.port = next.port;
  });
  return tail;
}

export function createRedisClients(target: RedisTarget, options: RedisClientsOptions): RedisClients {
  const timeoutMs = options.commandTimeoutMs;
  const bounded: RedisOptions = { commandTimeout: timeoutMs, socketTimeout: timeoutMs, retryStrategy: reconnect, reconnectOnError: reconnectOnReadOnly };
  const { commands, tail } =
    target.kind === 'cluster' ? cluster(target, bounded, timeoutMs) : target.kind === 'sentinel' ? sentinel(target, bounded) : standalone(target.url, bounded);
  // Connection errors are reported through readiness; unhandled 'error' events would crash the process.
  commands.on('error', () => {});
  tail.on('error', () => {});
  const health = createWriteHealth(commands, { probeKey: options.probeKey, everyMs: timeoutMs, logger: options.logger });
  const timers = [heartbeat(commands, timeoutMs), heartbeat(tail, timeoutMs)];
  return {
    topology: target.kind,
    commands,
    tail,
    writable: () => health.writable(),
    noteWrite: (outcome) => health.noteWrite(outcome),
    connected: (waitMs) => health.whenWritable(waitMs),
    async close() {
      health.close();
      for (const timer of timers) clearInterval(timer);
      commands.disconnect();
      tail.disconnect();
    },
  };
}
