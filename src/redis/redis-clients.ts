import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisAccess, RedisTarget } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { boundClusterCommands, boundCommands } from './command-deadline.js';
import { redisProblem } from './redis-problem.js';
import { createWriteHealth } from './write-health.js';
import { backoffDelay } from '../timing/backoff.js';

/*
 * The one place that knows which Redis a deployment shares (one server, a
 * Redis Cluster or a Sentinel group): everything else receives RedisClients
 * and runs the same commands on any of them.
 *
 * Three connections per instance: one for commands, which fails fast while
 * Redis is away (a webhook then answers 503 and its sender retries, rather
 * than waiting on a queue nobody can see); one like it for the event log's
 * appends, each followed by a WAIT for a replica that holds its connection
 * until a replica answers (replica-wait.ts), so no other command waits
 * behind it; and one subscribed to the live event channel, which waits out
 * reconnections. On a cluster the commands go through ioredis' Cluster (each
 * to the master of its key's slot, following MOVED and failovers); the
 * appends are one node's connection, to the master of the event log's slot
 * (WAIT counts the writes of its own connection), and so is the live
 * channel: a cluster passes a PUBLISH on to its other nodes only after the
 * append it came with has gone to the replica, so a master that dies between
 * the two takes with it the news of an event it kept, while a listener on
 * another node stays connected and never asks the log what it missed. On the
 * master, the listener's connection ends with it, and the log fills the gap
 * as after any reconnection.
 *
 * A Redis that stops answering without closing its connections (paused,
 * overloaded, a network that drops packets) would otherwise hold every caller
 * for as long as it lasts: every command gives up after `commandTimeoutMs`,
 * and a connection that receives nothing that long after a command is
 * dropped and made again, so the instance reads as away (not ready, commands
 * refused at once) until Redis answers again. A PING every `commandTimeoutMs`
 * asks on each connection even when nothing else does, so an idle stall is
 * noticed too. Both bounds are judged by command-deadline.ts, never by a late
 * event loop: ioredis' own `commandTimeout` and `socketTimeout` stay unset.
 */

export interface RedisClientsOptions {
  /**
   * Longest wait for any answer; also how often each connection is asked whether Redis still answers (the configuration's
   * `redisCommandTimeoutMs`).
   */
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
  /** The event log's appends and their WAITs alone (WAIT counts its own connection's writes, and holds it); always one node's. */
  appends: Redis;
  /** The connection subscribed to the live channel; always one node's. */
  tail: Redis;
  /** Whether the event log can be written now (write-health.ts): readiness and the webhook's answer follow it. */
  writable(): boolean;
  /** Why the event log cannot be written, in an operator's words (redis-problem.ts), once a write or a connection failed. */
  problem(): string | undefined;
  /** Told of every append to the event log: succeeded (`true`) or failed (its error). */
  noteWrite(outcome: true | { error: unknown }): void;
  /** Resolves true once the event log can be written, false after `timeoutMs`. */
  connected(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const reconnect = (attempt: number) => backoffDelay(attempt + 1, { firstMs: 50, mostMs: 2_000 });

/**
 * A server that answers READONLY is a replica now (a failover demoted it, or
 * the address names a replica): the connection is made again, so a Sentinel
 * group is asked afresh for its master; the command itself fails (its
 * webhook gets 503 and is sent again), never sent to the replica again.
 */
const reconnectOnReadOnly: RedisOptions['reconnectOnError'] = (error) => (error.message.startsWith('READONLY') ? 1 : false);

/** Asks every `everyMs` while the connection is up; an unanswered PING ends the connection (command-deadline.ts). */
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

interface Connections<C extends Redis | Cluster> {
  commands: C;
  appends: Redis;
  tail: Redis;
  /** Stops what watches the connections besides themselves, if anything does. */
  close?: () => void;
}

function standalone(url: string, bounded: RedisOptions): Connections<Redis> {
  return {
    commands: new Redis(url, { ...bounded, ...FAIL_FAST }),
    appends: new Redis(url, { ...bounded, ...FAIL_FAST }),
    tail: new Redis(url, { ...bounded, ...WAIT_OUT }),
  };
}

function sentinel(target: Extract<RedisTarget, { kind: 'sentinel' }>, bounded: RedisOptions, timeoutMs: number): Connections<Redis> {
  const options: RedisOptions = {
    ...bounded,
    ...accessOptions(target.access),
    sentinels: target.sentinels,
    name: target.name,
    // ioredis checks the role of the node it reaches (INFO) and asks the Sentinels again when it is not the master.
    role: 'master',
    enableTLSForSentinelMode: target.access.tls,
    ...(target.sentinelAccess.username !== undefined ? { sentinelUsername: target.sentinelAccess.username } : {}),
    ...(target.sentinelAccess.password !== undefined ? { sentinelPassword: target.sentinelAccess.password } : {}),
    ...(target.sentinelAccess.tls ? { sentinelTLS: {} } : {}),
    sentinelCommandTimeout: timeoutMs,
    // While every Sentinel is away, asked again at the pace of a lost server, not given up.
    sentinelRetryStrategy: reconnect,
  };
  const made = {
    commands: new Redis({ ...options, ...FAIL_FAST }),
    appends: new Redis({ ...options, ...FAIL_FAST }),
    tail: new Redis({ ...options, ...WAIT_OUT }),
  };
  const unwatch = followFailovers(target, [made.commands, made.appends, made.tail]);
  return { ...made, close: unwatch };
}

/**
 * Listens to every Sentinel for the failovers of `target` (+switch-master)
 * and ends each connection that is up on another node than the master
 * announced: it asks the Sentinels again, so it follows the failover even
 * when the old master stays up and keeps its connections open. Returns what
 * stops listening.
 *
 * ioredis' own `failoverDetector` is not used: it keeps listening for a
 * connection that closed on its own (its master died), and when a failover
 * is then announced while that connection is being made again, it ends the
 * attempt, which ioredis takes as the connection closed on purpose: it never
 * tries again (status `end`), and the instance stays unwritable for good.
 * The Sentinels of a group announce the same failover one after another,
 * and a slow Sentinel answers late, so that moment comes on a busy machine.
 * Here a connection that is not up is left alone: it is asking the Sentinels
 * for the master already.
 */
function followFailovers(target: Extract<RedisTarget, { kind: 'sentinel' }>, connections: Redis[]): () => void {
  const watchers = target.sentinels.map(({ host, port }) => {
    const watcher = new Redis({
      host,
      port,
      ...accessOptions(target.sentinelAccess),
      // Kept up as long as the instance runs, whichever Sentinel is away for a while; subscribed again on each reconnection.
      retryStrategy: reconnect,
      maxRetriesPerRequest: null,
    });
    watcher.on('error', () => {});
    watcher.subscribe('+switch-master').catch(() => {});
    watcher.on('message', (_channel: string, message: string) => {
      // "<name> <old host> <old port> <new host> <new port>"
      const [name, , , newHost, newPort] = message.split(' ');
      if (name !== target.name) return;
      for (const connection of connections) {
        if (connection.status !== 'ready' && connection.status !== 'connect') continue;
        const { stream } = connection;
        // Each Sentinel of the group announces the same failover: a connection already on the new master stays.
        const onNewMaster =
          String(stream.remotePort) === newPort && (stream.remoteAddress === newHost || stream.remoteAddress === `::ffff:${newHost}`);
        if (!onNewMaster) connection.disconnect(true);
      }
    });
    return watcher;
  });
  return () => {
    for (const watcher of watchers) watcher.disconnect();
  };
}

function cluster(
  target: Extract<RedisTarget, { kind: 'cluster' }>,
  bounded: RedisOptions,
  timeoutMs: number,
  logKey: string,
): Connections<Cluster> {
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
  return {
    commands,
    // MOVED too: the slot's master moved, and the connection follows it.
    appends: slotMasterConnection(commands, target.nodes, logKey, {
      ...bounded,
      ...access,
      ...FAIL_FAST,
      reconnectOnError: (error) => (/^(READONLY|MOVED) /.test(error.message) ? 1 : false),
    }),
    tail: slotMasterConnection(commands, target.nodes, logKey, { ...bounded, ...access, ...WAIT_OUT }),
  };
}

function nodeOptions({ retryStrategy: _retry, ...rest }: RedisOptions): NonNullable<ClusterOptions['redisOptions']> {
  return rest;
}

/**
 * A connection of its own to the master of the event log's slot (`logKey` is
 * in it), for the appends and for the live channel. It follows that master:
 * once the cluster knows its slots, whenever it looks at them again and the
 * master moved, and whenever the connection closes (a failover, or MOVED or
 * READONLY ended it: reconnectOnError), the next attempt goes to the slot's
 * master as the cluster knows it then.
 */
function slotMasterConnection(
  commands: Cluster,
  seeds: ReadonlyArray<{ host: string; port: number }>,
  logKey: string,
  options: RedisOptions,
): Redis {
  const first = seeds[0]!;
  const connection = new Redis({ ...options, host: first.host, port: first.port });
  let slot: number | undefined;
  /** Points the next attempt at the slot's master; whether that moved it. */
  const follow = (): boolean => {
    const master = slot === undefined ? undefined : commands.slots[slot]?.[0];
    if (!master) return false;
    const colon = master.lastIndexOf(':');
    const [host, port] = [master.slice(0, colon), Number(master.slice(colon + 1))];
    if (connection.options.host === host && connection.options.port === port) return false;
    // ioredis reads host and port from its options on every attempt (StandaloneConnector keeps this very object).
    connection.options.host = host;
    connection.options.port = port;
    return true;
  };
  commands.on('ready', () => {
    commands
      .cluster('KEYSLOT', logKey)
      .then((answer) => {
        slot = Number(answer);
        if (follow()) connection.disconnect(true);
      })
      .catch(() => {
        // Asked again on the cluster's next ready.
      });
  });
  // A master handed over by an operator (CLUSTER FAILOVER) lives on as a replica and keeps the connection up: the cluster's
  // next look at its slots says where the master is now.
  commands.on('refresh', () => {
    if (follow()) connection.disconnect(true);
  });
  connection.on('close', () => {
    // Where the cluster does not know of a new master yet, it is asked now rather than at its next periodic look, so the
    // connection reaches a promoted replica within a reconnection or two, not seconds after the promotion.
    if (!follow()) commands.refreshSlotsCache();
  });
  return connection;
}

export function createRedisClients(target: RedisTarget, options: RedisClientsOptions): RedisClients {
  const timeoutMs = options.commandTimeoutMs;
  // The deadlines are command-deadline.ts's, never ioredis' own `commandTimeout` and `socketTimeout` (a late event loop would trip them).
  const bounded: RedisOptions = { retryStrategy: reconnect, reconnectOnError: reconnectOnReadOnly };
  const {
    commands,
    appends,
    tail,
    close: stopWatching,
  } = target.kind === 'cluster'
    ? cluster(target, bounded, timeoutMs, options.probeKey)
    : target.kind === 'sentinel'
      ? sentinel(target, bounded, timeoutMs)
      : standalone(target.url, bounded);
  for (const connection of [appends, tail]) boundCommands(connection, timeoutMs);
  if (commands instanceof Cluster) boundClusterCommands(commands, timeoutMs);
  else boundCommands(commands, timeoutMs);
  // Connection errors are reported through readiness (and said by `problem`); unhandled 'error' events would crash the process.
  let connectionError: unknown;
  const remember = (error: unknown) => void (connectionError = error);
  commands.on('error', remember);
  appends.on('error', remember);
  tail.on('error', () => {});
  // Judged on the connection the event log writes on.
  const health = createWriteHealth(appends, { probeKey: options.probeKey, everyMs: timeoutMs, logger: options.logger });
  const timers = [heartbeat(commands, timeoutMs), heartbeat(appends, timeoutMs), heartbeat(tail, timeoutMs)];
  return {
    topology: target.kind,
    commands,
    appends,
    tail,
    writable: () => health.writable(),
    problem: () => health.problem() ?? (connectionError === undefined ? undefined : redisProblem(connectionError)),
    noteWrite: (outcome) => health.noteWrite(outcome),
    connected: (waitMs) => health.whenWritable(waitMs),
    async close() {
      health.close();
      for (const timer of timers) clearInterval(timer);
      stopWatching?.();
      commands.disconnect();
      appends.disconnect();
      tail.disconnect();
    },
  };
}
