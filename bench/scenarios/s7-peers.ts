import { CURRENT } from '../lib/builds.js';
import { graphqlTarget, measureHttp, type Measurement } from '../lib/http-load.js';
import { measurePaired, pairedComparison, pairedRows, type Paired } from '../lib/paired.js';
import { BATCH_IDS, BATCH_QUERY, batchCheck, FLEET_QUERY, fleetCheck, SINGLE_QUERY, singleCheck } from '../lib/queries.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { CLIENT_KEY, startApollo, startGateway } from '../lib/servers.js';
import { httpRow, ratioOf, times, verdict, type Row } from '../lib/table.js';

/*
 * S7: the S1 query and both S2 queries served by Apollo Server 5 with
 * @apollo/datasource-rest over the same upstream. The gateway's figures are
 * S1/S2's default-variant ones when they ran in this invocation, else measured here.
 * With `--baseline`, the gateway's figures are before/after pairs (S1's, else measured
 * here in turns on both builds' gateways), and each shape gets a before and an after row.
 */

const TARGET = 1.5;

const SHAPES = [
  { label: 'S1 transaction(id)', sharedKey: 'S1 graphql cache off', query: SINGLE_QUERY, variables: undefined, check: singleCheck },
  { label: 'S2 transactions(50 ids)', sharedKey: 'S2 batch', query: BATCH_QUERY, variables: { ids: BATCH_IDS }, check: batchCheck },
  { label: 'S2 fleet (20 aliases)', sharedKey: 'S2 fleet', query: FLEET_QUERY, variables: undefined, check: fleetCheck },
];

export const s7: Scenario = {
  name: 'S7',
  title: 'peer: Apollo Server 5 + RESTDataSource',
  async run({ upstream, shared, sharedPairs, log, baseline, comparisons }) {
    const apollo: Measurement[] = await withChild(startApollo(upstream.url), async (peer) => {
      const results: Measurement[] = [];
      for (const shape of SHAPES) {
        log(`Apollo: ${shape.label}`);
        results.push(await measureHttp(graphqlTarget(peer.url, '/', CLIENT_KEY, [{ query: shape.query, variables: shape.variables, check: shape.check() }]), { upstream, server: peer }));
      }
      return results;
    });
    const targetOf = (url: string, shape: (typeof SHAPES)[number]) => graphqlTarget(url, '/graphql', CLIENT_KEY, [{ query: shape.query, variables: shape.variables, check: shape.check() }]);
    const reused = new Set(SHAPES.filter((s) => (baseline ? sharedPairs.has(s.sharedKey) : shared.has(s.sharedKey))).map((s) => s.sharedKey));
    const missing = SHAPES.filter((s) => !reused.has(s.sharedKey));
    if (missing.length > 0 && baseline) {
      await withChild(startGateway(upstream.url, {}, {}, baseline), (before) =>
        withChild(startGateway(upstream.url, {}), async (after) => {
          for (const shape of missing) {
            log(`gateway ${baseline.label} and after in turns: ${shape.label}`);
            const p = await measurePaired({ build: baseline, target: targetOf(before.url, shape), server: before }, { build: CURRENT, target: targetOf(after.url, shape), server: after }, upstream);
            sharedPairs.set(shape.sharedKey, p);
            shared.set(shape.sharedKey, p.after);
          }
        }),
      );
    } else if (missing.length > 0) {
      await withChild(startGateway(upstream.url, {}), async (gateway) => {
        for (const shape of missing) {
          log(`gateway (not measured earlier in this run): ${shape.label}`);
          shared.set(shape.sharedKey, await measureHttp(targetOf(gateway.url, shape), { upstream, server: gateway }));
        }
      });
    }
    const rows: Row[] = [];
    SHAPES.forEach((shape, i) => {
      const ours = shared.get(shape.sharedKey)!;
      const pair: Paired | undefined = baseline ? sharedPairs.get(shape.sharedKey) : undefined;
      const theirs = apollo[i]!;
      const ratio = ratioOf(ours.rps.median, theirs.rps.median);
      const clean = ours.errors.total === 0 && theirs.errors.total === 0;
      const beforeRatio = pair ? `; ${baseline!.label} ${times(ratioOf(pair.before.rps.median, theirs.rps.median))} Apollo` : '';
      rows.push(
        httpRow('S7', `Apollo 5 + RESTDataSource: ${shape.label}`, theirs, {
          ratio: `gateway ${times(ratio)} Apollo${beforeRatio}`,
          target: `≥ ${TARGET}× ${verdict(ratio >= TARGET && clean)}`,
          notes: `${theirs.notes.join('; ')}; gateway (defaults) ${Math.round(ours.rps.median)} req/s, p99 ${Math.round(ours.p99)} ms`,
          ...(clean ? {} : { voided: ours.errors.total > 0 ? 'gateway figure had errors' : 'errors' }),
        }),
      );
      if (pair && baseline) {
        const from = reused.has(shape.sharedKey) ? ' (the S1 measurement above)' : '';
        const vsApollo = (m: Measurement) => ({ ratio: `${times(ratioOf(m.rps.median, theirs.rps.median))} Apollo` });
        rows.push(...pairedRows('S7', `gateway (defaults): ${shape.label}${from}`, pair, baseline, { before: vsApollo(pair.before), after: vsApollo(pair.after) }));
        comparisons.push(pairedComparison('S7', `gateway GraphQL (defaults): ${shape.label}${from}`, pair));
      }
    });
    return rows;
  },
};
