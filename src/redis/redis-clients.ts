import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../logging/logger.js';
import { boundCommands } from './command-deadline.js';

/*
 * Three connections per instance: one for commands, which fails fast while
 * Redis is away (a webhook then answers 503 and its sender retries, rather
 * than waiting on a queue nobody can see); one like it for the event log's
 * appends, each followed by a WAIT for a replica that holds its connection
 * until a replica answers (replica-wait.ts), so no other command waits
 * behind it; and one subscribed to the live event channel, which waits out
 * reconnections.
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
  /** Longest wait for any answer; also how often each connection is asked whether Redis still answers (the configuration's `redisCommandTimeoutMs`). */
  commandTimeoutMs: number;
  /** Told once when Redis stops answering (or cannot be reached), and once when it answers again. */
  logger?: Logger;
}

export interface RedisClients {
  commands: Redis;
  /** The event log's appends and their WAITs alone (WAIT counts its own connection's writes, and holds it). */
  appends: Redis;
  tail: Redis;
  /** Resolves when the command connection is ready, or after `timeoutMs`. */
  connected(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const reconnect: RedisOptions['retryStrategy'] = (attempt) => Math.min(50 * 2 ** attempt, 2_000);

/** Asks every `everyMs` while the connection is up; an unanswered PING ends the connection (command-deadline.ts). */
function heartbeat(connection: Redis, everyMs: number): NodeJS.Timeout {
  const timer = setInterval(() => {
    if (connection.status === 'ready') connection.ping().catch(() => {});
  }, everyMs);
  timer.unref();
  return timer;
}

export function createRedisClients(url: string, options: RedisClientsOptions): RedisClients {
  const timeoutMs = options.commandTimeoutMs;
  const bounded: RedisOptions = { retryStrategy: reconnect };
  // A command whose caller was already told it failed (a webhook answered 503) is not sent again on the next connection.
  const failFast: RedisOptions = { ...bounded, enableOfflineQueue: false, maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false };
  const commands = new Redis(url, failFast);
  const appends = new Redis(url, failFast);
  // The event log subscribes again itself on every reconnection, and then reads what went by meanwhile.
  const tail = new Redis(url, { ...bounded, maxRetriesPerRequest: null, autoResubscribe: false });
  for (const connection of [commands, appends, tail]) boundCommands(connection, timeoutMs);
  // Connection errors are reported through readiness; unhandled 'error' events would crash the process.
  commands.on('error', () => {});
  appends.on('error', () => {});
  tail.on('error', () => {});
  let away = false;
  let closing = false;
  commands.on('close', () => {
    if (away || closing) return;
    away = true;
    options.logger?.warn('Redis is not answering; reconnecting (until then webhooks get 503 and readiness says 503)');
  });
  commands.on('ready', () => {
    if (!away) return;
    away = false;
    options.logger?.info('Redis answers again');
  });
  const timers = [heartbeat(commands, timeoutMs), heartbeat(appends, timeoutMs), heartbeat(tail, timeoutMs)];
  return {
    commands,
    appends,
    tail,
    connected: (waitMs) =>
      new Promise((resolve) => {
        if (commands.status === 'ready') return resolve(true);
        const timer = setTimeout(() => resolve(false), waitMs);
        commands.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      }),
    async close() {
      closing = true;
      for (const timer of timers) clearInterval(timer);
      commands.disconnect();
      appends.disconnect();
      tail.disconnect();
    },
  };
}
