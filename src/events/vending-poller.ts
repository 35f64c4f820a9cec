import { randomUUID } from 'node:crypto';
import type { Vending } from '../contract/contract.js';
import type { Logger } from '../logging/logger.js';
import type { TransactionUpdateEvent } from './normalize.js';
import { vendingChanges, vendingLogEvent } from './vending-events.js';

/*
 * Reads the machines every `intervalMs` and publishes each one whose state
 * changed (vending-events.ts). The service sends no webhook for vendings, so
 * this is how `vendingUpdated` learns of a machine going offline. With Redis,
 * the instances of a deployment share one poller: each round, only the
 * holder of a lease (redis/redis-lease.ts) reads; another takes over within
 * the lease's life when the holder stops. A holder that just took over has
 * no earlier read: it publishes every machine, and the shared log's dedupe by
 * content appends only those whose state differs from what was published
 * last, so nothing is lost or repeated at a hand-over.
 */

export interface VendingLease {
  /** Takes or renews the lease; false while another instance holds it. */
  hold(): Promise<boolean>;
  release(): Promise<void>;
}

export interface VendingPollerOptions {
  /** The machines as the service lists them now (flat products). */
  list(): Promise<Vending[]>;
  /** Publishes a change (dedupe by content): resolves false when the log already holds that state. */
  publish(event: TransactionUpdateEvent): Promise<boolean>;
  intervalMs: number;
  /**
   * Since when a machine is offline as the machines' log last said (vending-states.ts): a poller that takes over
   * from another instance keeps that time rather than making its own.
   */
  offlineSince?: ((vendingId: string) => string | undefined) | undefined;
  /** With several instances: only the holder polls. @default every round polls */
  lease?: VendingLease | undefined;
  logger: Logger;
  /** @default Date.now */
  now?: () => number;
}

export interface VendingPoller {
  /** One round now (tests; the timer runs them otherwise). */
  poll(): Promise<void>;
  stop(): Promise<void>;
}

export function startVendingPoller(options: VendingPollerOptions): VendingPoller {
  const now = options.now ?? Date.now;
  /** The last read of each machine, while this instance polls. */
  const last = new Map<string, Vending>();
  /** Since when each machine is seen offline. */
  const offline = new Map<string, string>();
  let failing = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();

  async function once(): Promise<void> {
    if (options.lease && !(await options.lease.hold())) {
      // Another instance polls; when this one takes over, it starts from what the log holds.
      last.clear();
      offline.clear();
      return;
    }
    const machines = await options.list();
    const at = new Date(now()).toISOString();
    for (const read of machines) {
      if (stopped) return;
      const vending = JSON.parse(JSON.stringify(read)) as Vending;
      const vendingId = vending.vendingId;
      const before = last.get(vendingId);
      const changed = vendingChanges(before, vending);
      last.set(vendingId, vending);
      if (vending.online === false) {
        if (!offline.has(vendingId))
          offline.set(vendingId, (before?.online !== false && before !== undefined ? undefined : options.offlineSince?.(vendingId)) ?? at);
      } else offline.delete(vendingId);
      if (before && changed.length === 0) continue;
      await options.publish(
        vendingLogEvent({
          eventId: `vnd_${randomUUID()}`,
          receivedAt: at,
          vendingId,
          changed,
          vending,
          offlineSince: offline.get(vendingId) ?? null,
        }),
      );
    }
  }

  async function guarded(): Promise<void> {
    try {
      await once();
      if (failing) options.logger.info('machines are read again');
      failing = false;
    } catch (error) {
      // Once per outage: the service or Redis away is logged by their own clients too.
      if (!failing)
        options.logger.warn({ err: error }, 'could not read the machines for vendingUpdated; trying again every VENDING_POLL_MS');
      failing = true;
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      round = guarded().finally(schedule);
    }, options.intervalMs);
    timer.unref();
  }
  round = guarded().finally(schedule);

  return {
    poll: () => (round = round.then(guarded)),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round.catch(() => {});
      await options.lease?.release().catch(() => {});
    },
  };
}
