import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/*
 * A Lua script sent by its SHA1 (EVALSHA), in full only when Redis answers
 * NOSCRIPT (first use, or after a restart emptied its script cache). A script
 * of a few kilobytes run on every webhook or page would otherwise cross the
 * wire and be hashed by Redis each time. NOSCRIPT means nothing ran, so
 * sending it again cannot run it twice.
 */

export type RedisScript = (commands: Redis, keys: readonly string[], args: ReadonlyArray<string | number>) => Promise<unknown>;

export function redisScript(lua: string): RedisScript {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (commands, keys, args) => {
    try {
      return await commands.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String(error).includes('NOSCRIPT')) throw error;
      return commands.eval(lua, keys.length, ...keys, ...args);
    }
  };
}
