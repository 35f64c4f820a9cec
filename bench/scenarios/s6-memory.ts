import { sleep, type Child } from '../lib/children.js';
import { DeliveryTracker, fdsNeeded, openFilesLimit } from '../lib/delivery.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { metric, startGateway } from '../lib/servers.js';
import { fmt } from '../lib/stats.js';
import { eventIdOf, liteFleet } from '../lib/subscribers.js';
import { verdict } from '../lib/table.js';
import { webhookSender } from '../lib/webhooks.js';

/*
 * S6: memory per idle subscriber, as the slope between 1 000 and 5 000
 * subscribers, so the gateway's fixed footprint cancels out. Both readings
 * follow a probe event (every subscription fully set up and once used) and a
 * forced GC in the child (SIGUSR2, see child-preload.ts).
 */

const FROM = 1_000;
const TO = 5_000;
const TARGET_KB = 20;

interface Reading {
  rss: number;
  heap: number;
}

async function settledReading(gateway: Child): Promise<Reading> {
  for (let k = 0; k < 3; k += 1) {
    gateway.signal('SIGUSR2');
    await sleep(400);
  }
  return { rss: await metric(gateway, 'process_resident_memory_bytes'), heap: await metric(gateway, 'nodejs_heap_size_used_bytes') };
}

export const s6: Scenario = {
  name: 'S6',
  title: 'memory per subscriber',
  async run({ upstream, log }) {
    const variant = `idle subscribers ${fmt(FROM)} → ${fmt(TO)}, defaults`;
    const limit = openFilesLimit();
    if (!(limit >= fdsNeeded(TO))) {
      return [{ scenario: 'S6', variant, value: '', p99: '', ratio: '', target: '', calls: '', errors: '', notes: '', voided: `ulimit -n ${limit} < ${fdsNeeded(TO)} needed` }];
    }
    return withChild(startGateway(upstream.url, {}), async (gateway) => {
      let probes = new DeliveryTracker(FROM);
      const fleet = liteFleet(gateway.url, (i, data) => probes.note(i, eventIdOf(data), undefined));
      const sender = webhookSender(gateway.url, 2);
      try {
        const readAt = async (size: number): Promise<[Reading, number]> => {
          log(`${size} subscribers`);
          probes = new DeliveryTracker(size);
          await fleet.grow(size);
          const unprobed = await probes.probeAll((id) => sender.post(id, 0));
          return [await settledReading(gateway), unprobed];
        };
        const [low, unprobedLow] = await readAt(FROM);
        const [high, unprobedHigh] = await readAt(TO);
        const perSub = (pick: (r: Reading) => number) => (pick(high) - pick(low)) / (TO - FROM) / 1_024;
        const rssKb = perSub((r) => r.rss);
        const heapKb = perSub((r) => r.heap);
        const errors = unprobedLow + unprobedHigh + fleet.failures;
        const mb = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MB`;
        return [
          {
            scenario: 'S6',
            variant,
            value: `RSS ${fmt(rssKb, 1)} KB/subscriber, heap ${fmt(heapKb, 1)} KB/subscriber`,
            p99: '',
            ratio: '',
            target: `≤ ${TARGET_KB} KB/subscriber ${verdict(rssKb <= TARGET_KB && heapKb <= TARGET_KB && errors === 0)}`,
            calls: '',
            errors: errors === 0 ? '0' : `unprobed ${unprobedLow + unprobedHigh}, conn failures ${fleet.failures}`,
            notes: `RSS ${mb(low.rss)} → ${mb(high.rss)}, heap ${mb(low.heap)} → ${mb(high.heap)} (after forced GC; read from /metrics)`,
            ...(errors > 0 ? { voided: 'subscribers failed' } : Number.isNaN(rssKb) ? { voided: 'metrics missing' } : {}),
          },
        ];
      } finally {
        await fleet.close();
        await sender.close();
      }
    });
  },
};
