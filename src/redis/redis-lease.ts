import type { Cluster, Redis, Result } from 'ioredis';

/*
 * A lease one instance of a deployment holds at a time (the vendings'
 * poller: one reader of the service for every instance sharing Redis). A key
 * set with NX and an expiry names the holder; the holder renews it each time
 * it acts, and another instance takes it once it expired (its holder stopped
 * or lost Redis). Scripts, registered by name like the event log's append
 * (ioredis `defineCommand`), so that renewing and releasing touch the key
 * only while this instance holds it.
 */

const HOLD_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`;

const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    vendingGatewayHoldLease(key: string, holder: string, ttlMs: number): Result<number, Context>;
    vendingGatewayReleaseLease(key: string, holder: string): Result<number, Context>;
  }
}

export interface RedisLease {
  /** Takes the lease, or renews it when this holder has it; false while another holds it. */
  hold(): Promise<boolean>;
  /** Gives it up at once (a stopping instance), if this holder has it. */
  release(): Promise<void>;
}

/** The lease at `key`, held by `holder` (an id of this instance) for `ttlMs` after each hold. */
export function createRedisLease(commands: Redis | Cluster, key: string, holder: string, ttlMs: number): RedisLease {
  commands.defineCommand('vendingGatewayHoldLease', { numberOfKeys: 1, lua: HOLD_SCRIPT });
  commands.defineCommand('vendingGatewayReleaseLease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  return {
    hold: async () => (await commands.vendingGatewayHoldLease(key, holder, ttlMs)) === 1,
    release: async () => void (await commands.vendingGatewayReleaseLease(key, holder)),
  };
}
