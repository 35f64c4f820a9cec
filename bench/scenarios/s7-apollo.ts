import { graphqlTarget, measureHttp, type Measurement } from '../lib/http-load.js';
import { BATCH_IDS, BATCH_QUERY, batchCheck, FLEET_QUERY, fleetCheck, SINGLE_QUERY, singleCheck } from '../lib/queries.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { CLIENT_KEY, startApollo, startGateway } from '../lib/servers.js';
import { httpRow, ratioOf, times, verdict, type Row } from '../lib/table.js';

/*
 * S7: the S1 query and both S2 queries served by Apollo Server 5 with
 * @apollo/datasource-rest over the same upstream. The gateway's figures are
 * S1/S2's default-variant ones when they ran in this invocation, else measured here.
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
  async run({ upstream, shared, log }) {
    const apollo: Measurement[] = await withChild(startApollo(upstream.url), async (peer) => {
      const results: Measurement[] = [];
      for (const shape of SHAPES) {
        log(`Apollo: ${shape.label}`);
        results.push(await measureHttp(graphqlTarget(peer.url, '/', CLIENT_KEY, [{ query: shape.query, variables: shape.variables, check: shape.check() }]), { upstream, server: peer }));
      }
      return results;
    });
    const missing = SHAPES.filter((s) => !shared.has(s.sharedKey));
    if (missing.length > 0) {
      await withChild(startGateway(upstream.url, {}), async (gateway) => {
        for (const shape of missing) {
          log(`gateway (not measured earlier in this run): ${shape.label}`);
          shared.set(shape.sharedKey, await measureHttp(graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, [{ query: shape.query, variables: shape.variables, check: shape.check() }]), { upstream, server: gateway }));
        }
      });
    }
    const rows: Row[] = [];
    SHAPES.forEach((shape, i) => {
      const ours = shared.get(shape.sharedKey)!;
      const theirs = apollo[i]!;
      const ratio = ratioOf(ours.rps.median, theirs.rps.median);
      const clean = ours.errors.total === 0 && theirs.errors.total === 0;
      rows.push(
        httpRow('S7', `Apollo 5 + RESTDataSource: ${shape.label}`, theirs, {
          ratio: `gateway ${times(ratio)} Apollo`,
          target: `≥ ${TARGET}× ${verdict(ratio >= TARGET && clean)}`,
          notes: `${theirs.notes.join('; ')}; gateway (defaults) ${Math.round(ours.rps.median)} req/s, p99 ${Math.round(ours.p99)} ms`,
          ...(clean ? {} : { voided: ours.errors.total > 0 ? 'gateway figure had errors' : 'errors' }),
        }),
      );
    });
    return rows;
  },
};
