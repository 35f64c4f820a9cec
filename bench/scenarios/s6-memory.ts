import { fleetProcesses, subscribersAllowed } from '../lib/delivery.js';
import { startWorkerFleet } from '../lib/fleet-workers.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { memoryAfterGc, startGateway, type MemoryReading } from '../lib/servers.js';
import { fmt } from '../lib/stats.js';
import { row, verdict } from '../lib/table.js';

const FROM = 5_000;
const TO = 20_000;
const TARGET_KB = 12;

export const s6: Scenario = {
  name: 'S6',
  title: 'memory per subscriber',
  async run({ upstream, log }) {
    const { size: to, shortfall } = subscribersAllowed(TO);
    if (shortfall) log(shortfall);
    const variant = `idle subscribers ${fmt(FROM)} → ${fmt(to)}, defaults`;
    return withChild(startGateway(upstream.url, {}), (gateway) =>
      withChild(startWorkerFleet(gateway.url, 'graphql-ws', fleetProcesses(to)), async (fleet) => {
        const readAt = async (size: number): Promise<[MemoryReading, number]> => {
          log(`${fmt(size)} subscribers`);
          await fleet.grow(size);
          const unprobed = await fleet.probeAll();
          return [await memoryAfterGc(gateway), unprobed];
        };
        const [low, unprobedLow] = await readAt(FROM);
        const [high, unprobedHigh] = await readAt(to);
        const perSub = (pick: (r: MemoryReading) => number) => (pick(high) - pick(low)) / (to - FROM) / 1_024;
        const rssKb = perSub((r) => r.rss);
        const heapKb = perSub((r) => r.heap);
        const errors = unprobedLow + unprobedHigh + fleet.failures;
        const mb = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MB`;
        return [
          row('S6', variant, {
            value: `RSS ${fmt(rssKb, 1)} KB/subscriber, heap ${fmt(heapKb, 1)} KB/subscriber`,
            target:
              `≤ ${TARGET_KB} KB/subscriber${shortfall ? ` (to ${fmt(to)}: open-files limit)` : ''} ` +
              `${errors > 0 ? 'VOID (errors)' : verdict(rssKb <= TARGET_KB && heapKb <= TARGET_KB)}`,
            errors: errors === 0 ? '0' : `unprobed ${unprobedLow + unprobedHigh}, conn failures ${fleet.failures}`,
            notes: [
              `RSS ${mb(low.rss)} → ${mb(high.rss)}, heap ${mb(low.heap)} → ${mb(high.heap)} (after forced GC; read from /metrics)`,
              shortfall,
            ],
            voided: errors > 0 ? 'subscribers failed' : Number.isNaN(rssKb) ? 'metrics missing' : undefined,
          }),
        ];
      }),
    );
  },
};
