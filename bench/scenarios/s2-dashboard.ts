import { graphqlTarget, measureHttp } from '../lib/http-load.js';
import { BATCH_DISTINCT, BATCH_IDS, BATCH_QUERY, batchCheck, FLEET_QUERY, fleetCheck } from '../lib/queries.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { askGateway, CLIENT_KEY, contractCalls, startGateway, type Variant } from '../lib/servers.js';
import { fmt } from '../lib/stats.js';
import { httpRow, verdict, type Row } from '../lib/table.js';

const VARIANTS: Array<{ label: string; variant: Variant; key?: string }> = [
  { label: 'defaults (coalesce on, cache off)', variant: {}, key: 'S2' },
  { label: 'coalesce off, cache off', variant: { coalesce: false } },
  { label: 'cache on (5 s)', variant: { cacheTtlMs: 5_000 } },
];

export const s2: Scenario = {
  name: 'S2',
  title: 'dashboard shapes',
  async run({ upstream, shared, log }) {
    const rows: Row[] = [];
    const shapes = [
      {
        name: 'batch',
        label: `transactions(ids: 50, ${BATCH_DISTINCT} distinct)`,
        query: BATCH_QUERY,
        variables: { ids: BATCH_IDS },
        check: batchCheck,
        target: BATCH_DISTINCT,
      },
      {
        name: 'fleet',
        label: 'fleet: vendings{totalCount} + 20 vending aliases',
        query: FLEET_QUERY,
        check: fleetCheck,
        target: 1,
      },
    ];
    for (const { label, variant, key } of VARIANTS) {
      await withChild(startGateway(upstream.url, variant), async (gateway) => {
        for (const shape of shapes) {
          log(`${shape.label}, ${label}`);
          // Upstream calls of the query sent alone (NaN for a wrong answer), before any load: on a fresh gateway the cache (if on) is
          // cold, so this is the query's own cost.
          const before = await upstream.stats();
          const { status, text } = await askGateway(gateway.url, shape.query, shape.variables);
          const alone = status === 200 && shape.check().matches(text) ? contractCalls(before, await upstream.stats()) : Number.NaN;
          const target = graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, [{ ...shape, check: shape.check() }]);
          const m = await measureHttp(target, { upstream, server: gateway });
          if (key) shared.set(`${key} ${shape.name}`, m);
          const row = httpRow('S2', `${shape.label}, ${label}`, m, {
            calls: `alone ${fmt(alone)}; under load ${fmt(m.callsPerQuery ?? Number.NaN, 2)}`,
            target: `alone = ${shape.target} ${verdict(alone === shape.target)}`,
          });
          if (Number.isNaN(alone)) row.voided = 'the query sent alone got a wrong answer';
          rows.push(row);
        }
      });
    }
    return rows;
  },
};
