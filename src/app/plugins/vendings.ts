import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';
import { SYSTEM_IDENTITY } from '../../backends/backend.js';
import type { Config } from '../../config/config.js';
import { DEFAULT_ACCOUNT } from '../../contract/accounts.js';
import { startVendingPoller } from '../../events/vending-poller.js';
import { createVendingStates, type VendingStates } from '../../events/vending-states.js';
import type { Logger } from '../../logging/logger.js';
import { createRedisLease } from '../../redis/redis-lease.js';
import { redisKeys } from '../../redis/redis-keys.js';

/*
 * The machines, live: the service sends no webhook for vendings, so the
 * gateway reads `GET /vendings` every VENDING_POLL_MS with its own key and
 * publishes what changed on the machines' log (`vendingUpdated`). One poller
 * for every instance sharing a Redis (a lease); none in forward mode, where
 * the gateway has no key of its own to read with. Every instance keeps what
 * it heard of each machine (since when it is offline).
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** Since when each machine is offline, as the machines' log said. */
    vendingStates: VendingStates;
  }
}

/** A lease outlives a few rounds, so a holder that is late once keeps it, and one that stopped is replaced soon. */
const leaseMs = (intervalMs: number) => Math.max(3 * intervalMs, 3_000);

export const vendingsPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const logger = app.log as Logger;
    const { vendingBus, redis } = app;
    const states = createVendingStates();
    const unlisten = vendingBus.onEvent((event) => states.note(event));
    app.decorate('vendingStates', states);

    const intervalMs = config.vendingPollMs;
    if (intervalMs > 0 && !config.forwardMode) {
      const flat = config.productsValues.flat === '' ? undefined : config.productsValues.flat;
      const poller = startVendingPoller({
        intervalMs,
        // The backend as picked, past the cache: a cached list would hide the changes it is read for.
        list: () => app.upstream.listVendings({ products: flat }, { authorization: '', identity: SYSTEM_IDENTITY }),
        publish: (event) => vendingBus.publish(event, 'content'),
        offlineSince: (vendingId) => states.offlineSince(DEFAULT_ACCOUNT, vendingId),
        lease: redis && createRedisLease(redis.commands, redisKeys(config.redisPrefix).vendingPollLease, randomUUID(), leaseMs(intervalMs)),
        logger,
      });
      // Stopped before the drain, as the demo simulator is; the lease goes at once, so another instance takes over.
      app.addHook('preClose', () => poller.stop());
    }
    app.addHook('onClose', async () => unlisten());
  },
  { name: 'vendings', dependencies: ['events', 'backend', 'redis'] },
);
