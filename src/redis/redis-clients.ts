import { Redis, type RedisOptions } from 'ioredis';

/*
 * Two connections per instance: one for commands, which fails fast while
 * Redis is away (a webhook then answers 503 and its sender retries, rather
 * than waiting on a queue nobody can see), and one subscribed to the live
 * event channel, which waits out reconnections.
 */

export interface RedisClients {
  commands: Redis;
  tail: Redis;
  /** Resolves when the command connection is ready, or after `timeoutMs`. */
  connected(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const reconnect: RedisOptions['retryStrategy'] = (attempt) => Math.min(50 * 2 ** attempt, 2_000);

export function createRedisClients(url: string): RedisClients {
  const commands = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: reconnect, lazyConnect: false });
  // The event log subscribes again itself on every reconnection, and then reads what went by meanwhile.
  const tail = new Redis(url, { maxRetriesPerRequest: null, retryStrategy: reconnect, autoResubscribe: false });
  // Connection errors are reported through readiness; unhandled 'error' events would crash the process.
  commands.on('error', () => {});
  tail.on('error', () => {});
  return {
    commands,
    tail,
    connected: (timeoutMs) =>
      new Promise((resolve) => {
        if (commands.status === 'ready') return resolve(true);
        const timer = setTimeout(() => resolve(false), timeoutMs);
        commands.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      }),
    async close() {
      commands.disconnect();
      tail.disconnect();
    },
  };
}
