import { BodyCheck } from '../lib/expect.js';
import { transactionById } from '../lib/fixtures.js';
import { graphqlTarget, measureHttp, type Measurement } from '../lib/http-load.js';
import { S1_ID, SINGLE_QUERY, singleCheck } from '../lib/queries.js';
import type { Scenario } from '../lib/scenario.js';
import { withChild } from '../lib/scenario.js';
import { CLIENT_KEY, startBareHop, startGateway, type Variant } from '../lib/servers.js';
import { UPSTREAM_KEY } from '../lib/contract-upstream.js';
import { httpRow, ratioOf, times, verdict, type Row } from '../lib/table.js';

/*
 * S1: one transaction through the gateway (GraphQL and REST passthrough) against the upstream answering it directly,
 * and against a bare Node proxy hop: the least any gateway process adds on this machine.
 */

const PATH = `/transactions/${S1_ID}`;
const envelope = JSON.stringify({ data: transactionById.get(S1_ID) });

const VARIANTS: Array<{ label: string; variant: Variant; graphqlTarget: number; key: string }> = [
  { label: 'cache off', variant: { cacheTtlMs: 0 }, graphqlTarget: 0.5, key: 'S1 graphql cache off' },
  { label: 'cache on (5 s, hits)', variant: { cacheTtlMs: 5_000 }, graphqlTarget: 2, key: 'S1 graphql cache on' },
  { label: 'cache off, GraphQL fast path off (every GraphQL request through yoga\'s Fetch adapter)', variant: { cacheTtlMs: 0, graphqlFastPath: 'off' }, graphqlTarget: 0.5, key: 'S1 graphql fast path off' },
];
const REST_TARGET = 0.7;

export const s1: Scenario = {
  name: 'S1',
  title: 'single resource',
  async run({ upstream, shared, log }) {
    log('direct GET on the upstream');
    const direct = await measureHttp(
      { url: upstream.url, method: 'GET', headers: { authorization: UPSTREAM_KEY }, cases: [{ path: PATH, check: BodyCheck.exact(envelope) }] },
      { server: upstream },
    );
    const rows: Row[] = [httpRow('S1', 'direct upstream GET /transactions/{id}', direct, { calls: '1' })];
    // The floor of any gateway here: one more Node HTTP hop, doing nothing else.
    log('bare proxy hop (baseline)');
    const hop = await withChild(startBareHop(upstream.url), (bare) =>
      measureHttp({ url: bare.url, method: 'GET', headers: {}, cases: [{ path: PATH, check: BodyCheck.exact(envelope) }] }, { upstream, server: bare }),
    );
    rows.push({ ...httpRow('S1', 'bare Node proxy hop GET /transactions/{id} (baseline: no gateway work)', hop), ratio: `${times(ratioOf(hop.rps.median, direct.rps.median))} direct` });
    const compared = (m: Measurement, target: number, extra: Partial<Row>): Row => {
      const ratio = ratioOf(m.rps.median, direct.rps.median);
      return { ...httpRow('S1', '', m), ratio: `${times(ratio)} direct`, target: `≥ ${target}× ${verdict(ratio >= target && m.errors.total === 0)}`, ...extra };
    };
    for (const { label, variant, graphqlTarget: target, key } of VARIANTS) {
      await withChild(startGateway(upstream.url, variant), async (gateway) => {
        log(`GraphQL, ${label}`);
        const graphql = await measureHttp(graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, [{ query: SINGLE_QUERY, check: singleCheck() }]), { upstream, server: gateway });
        shared.set(key, graphql);
        rows.push(compared(graphql, target, { variant: `gateway GraphQL transaction(id), ${label}` }));
        log(`REST passthrough, ${label}`);
        const rest = await measureHttp(
          { url: gateway.url, method: 'GET', headers: { authorization: CLIENT_KEY }, cases: [{ path: PATH, check: new BodyCheck(JSON.parse(envelope)) }] },
          { upstream, server: gateway },
        );
        rows.push(compared(rest, REST_TARGET, { variant: `gateway REST GET /transactions/{id}, ${label}` }));
      });
    }
    return rows;
  },
};
