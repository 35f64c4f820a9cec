import type { Redis } from 'ioredis';

/*
 * A Redis that evicts keys when full would drop what dedupe and resume stand
 * on (an event id's claim, a transaction's last content, the log itself): a
 * redelivery would then be published again and a resume answered
 * EVENTS_EXPIRED, silently. So a Redis with `maxmemory` set must not evict:
 * `noeviction` makes a full Redis refuse writes, which webhooks answer with
 * 503 (their senders retry) and readiness shows. Managed services may refuse
 * CONFIG GET: then this cannot be known, and is only said.
 */

/** The Redis's eviction as CONFIG GET tells it: none, keys evicted when full, or not known (CONFIG refused). */
export type Eviction = { evicts: false } | { evicts: true; policy: string; maxmemory: number } | { unknown: string };

export async function evictionOf(commands: Redis): Promise<Eviction> {
  try {
    const [, policy] = (await commands.config('GET', 'maxmemory-policy')) as string[];
    const [, maxmemory] = (await commands.config('GET', 'maxmemory')) as string[];
    if (policy === undefined || maxmemory === undefined) return { unknown: 'CONFIG GET answered nothing' };
    return policy === 'noeviction' || Number(maxmemory) === 0 ? { evicts: false } : { evicts: true, policy, maxmemory: Number(maxmemory) };
  } catch (error) {
    return { unknown: error instanceof Error ? error.message : String(error) };
  }
}
