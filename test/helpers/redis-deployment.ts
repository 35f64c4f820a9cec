import { randomUUID } from 'node:crypto';
import type { Config } from '../../src/config/config.js';
import type { WebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, type RunningGateway } from './gateway.js';
import { startTestRedis, type TestRedis } from './redis-server.js';

/*
 * Gateway instances of one deployment sharing a test Redis (same REDIS_URL,
 * same REDIS_PREFIX), and a sender that retries a webhook the way the
 * contract's service would.
 */

export interface RedisDeployments {
  redis: TestRedis;
  /** `count` instances of a new deployment (a key prefix of its own); `tune` as for startGateway. */
  start(count: number, env?: Record<string, string>, tune?: (config: Config) => Config): Promise<RunningGateway[]>;
  /** Closes every instance started, then the Redis. */
  close(): Promise<void>;
}

export async function redisDeployments(): Promise<RedisDeployments> {
  const redis = await startTestRedis();
  const gateways: RunningGateway[] = [];
  return {
    redis,
    async start(count, env = {}, tune) {
      const prefix = `test-${randomUUID()}:`;
      const started = await Promise.all(
        Array.from({ length: count }, () => startGateway({ REDIS_URL: redis.url, REDIS_PREFIX: prefix, ...env }, {}, tune)),
      );
      gateways.push(...started);
      return started;
    },
    async close() {
      await Promise.all(gateways.map((gateway) => gateway.close()));
      await redis.close();
    },
  };
}

/** POSTs a webhook, retrying on 503 (with its Retry-After) as the sender would; resolves with the first other status. */
export async function deliverWebhook(
  gateway: RunningGateway,
  request: WebhookRequest,
  onRefused: (body: string) => void = () => {},
): Promise<{ status: number; retryAfter: string[] }> {
  const retryAfter: string[] = [];
  // As the service does, for as long as a failover may take: counted in time, not in tries (a busy machine answers each
  // try later, and a hundred tries were once over before a Sentinel failover on a loaded machine was).
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const response = await fetch(`${gateway.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
    if (response.status !== 503) return { status: response.status, retryAfter };
    retryAfter.push(response.headers.get('retry-after') ?? '');
    onRefused(await response.text());
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`webhook answered 503 for 30 s (${retryAfter.length} tries)`);
}
