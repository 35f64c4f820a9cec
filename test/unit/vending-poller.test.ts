import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Vending } from '../../src/contract/contract.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { vendingChanges, vendingUpdateOf, type VendingUpdate } from '../../src/events/vending-events.js';
import { startVendingPoller, type VendingLease } from '../../src/events/vending-poller.js';

/*
 * The machines' poller on its own: what it publishes at its first read, at a
 * change and at none, since when a machine is offline (its own read, or what
 * the log said when it takes over from another instance), and that it reads
 * nothing while another instance holds the lease.
 */

const logger = pino({ level: 'silent' });
const HOUR = 3_600_000;

const machine = (vendingId: string, online: boolean): Vending => ({ vendingId, status: 'active', online, enabled: true, products: [] });

function poller(
  machines: Vending[],
  options: { now: () => number; lease?: VendingLease; offlineSince?: (id: string) => string | undefined },
) {
  const published: VendingUpdate[] = [];
  let reads = 0;
  const running = startVendingPoller({
    intervalMs: HOUR,
    list: async () => {
      reads += 1;
      return machines;
    },
    publish: async (event: TransactionUpdateEvent) => {
      published.push(vendingUpdateOf(event));
      return true;
    },
    logger,
    ...options,
  });
  return { running, published, reads: () => reads };
}

describe('vending poller', () => {
  it('publishes every machine at its first read, then only the ones that changed, naming what changed', async () => {
    let now = Date.UTC(2026, 10, 27, 12, 0, 0);
    const machines = [machine('a', true), machine('b', false)];
    const { running, published } = poller(machines, { now: () => now });
    await running.poll();
    expect(published.map((update) => [update.vendingId, update.changed, update.offlineSince])).toEqual([
      ['a', [], null],
      ['b', [], new Date(now).toISOString()],
    ]);
    const firstOffline = new Date(now).toISOString();
    published.length = 0;
    now += 60_000;
    await running.poll();
    expect(published).toEqual([]);

    machines[0] = { ...machines[0]!, online: false, enabled: false };
    now += 60_000;
    await running.poll();
    expect(published.map((update) => [update.vendingId, update.changed, update.offlineSince])).toEqual([
      ['a', ['online', 'enabled'], new Date(now).toISOString()],
    ]);
    // b stays offline since its first read.
    machines[1] = { ...machines[1]!, status: 'maintenance' };
    await running.poll();
    expect(published.at(-1)).toMatchObject({ vendingId: 'b', changed: ['status'], offlineSince: firstOffline });
    await running.stop();
  });

  it('keeps the offline time the log holds when it takes over from another instance', async () => {
    const known = '2026-11-27T08:00:00.000Z';
    const { running, published } = poller([machine('b', false)], {
      now: () => Date.UTC(2026, 10, 27, 12),
      offlineSince: (id) => (id === 'b' ? known : undefined),
    });
    await running.poll();
    expect(published[0]).toMatchObject({ vendingId: 'b', offlineSince: known });
    await running.stop();
  });

  it('reads nothing while another instance holds the lease, and gives it up when it stops', async () => {
    let held = false;
    let released = 0;
    const lease: VendingLease = { hold: async () => held, release: async () => void (released += 1) };
    const { running, published, reads } = poller([machine('a', true)], { now: Date.now, lease });
    await running.poll();
    expect(reads()).toBe(0);
    held = true;
    await running.poll();
    expect(reads()).toBe(1);
    expect(published).toHaveLength(1);
    await running.stop();
    expect(released).toBe(1);
  });

  it('names the fields that differ between two reads, products included', () => {
    const before = machine('a', true);
    expect(vendingChanges(undefined, before)).toEqual([]);
    expect(vendingChanges(before, { ...before, products: [{ productId: 'p', quantity: 1 }] })).toEqual(['products']);
    expect(vendingChanges(before, { ...before, address: 'elsewhere' })).toEqual([]);
  });
});
