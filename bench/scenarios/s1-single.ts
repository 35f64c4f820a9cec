import type { Build } from '../lib/builds.js';
import { CURRENT } from '../lib/builds.js';
import type { Child } from '../lib/children.js';
import { BodyCheck } from '../lib/expect.js';
import { transactionById } from '../lib/fixtures.js';
import { graphqlTarget, measureHttp, type HttpTarget, type Measurement } from '../lib/http-load.js';
import { measurePaired, pairedComparison, pairedRows } from '../lib/paired.js';
import { S1_ID, SINGLE_QUERY, singleCheck } from '../lib/queries.js';
import type { Scenario, ScenarioContext } from '../lib/scenario.js';
import { withChild } from '../lib/scenario.js';
import { CLIENT_KEY, startBareHop, startGateway, type Variant } from '../lib/servers.js';
import { UPSTREAM_KEY } from '../lib/contract-upstream.js';
import { httpRow, ratioOf, times, verdict, type Row } from '../lib/table.js';

/*
 * S1: one transaction through the gateway (GraphQL and REST passthrough) against the upstream answering it directly,
 * and against a bare Node proxy hop: the least any gateway process adds on this machine. With `--baseline`, each
 * variant runs on the baseline's gateway and the working tree's, measured in turns (lib/paired.ts).
 */

const PATH = `/transactions/${S1_ID}`;
const envelope = JSON.stringify({ data: transactionById.get(S1_ID) });

const VARIANTS: Array<{ label: string; variant: Variant; graphqlTarget: number; key: string; clientAccept?: boolean }> = [
  { label: 'cache off', variant: { cacheTtlMs: 0 }, graphqlTarget: 0.5, key: 'S1 graphql cache off', clientAccept: true },
  { label: 'cache on (5 s, hits)', variant: { cacheTtlMs: 5_000 }, graphqlTarget: 2, key: 'S1 graphql cache on' },
  { label: 'cache off, GraphQL fast path off (every GraphQL request through yoga\'s Fetch adapter)', variant: { cacheTtlMs: 0, graphqlFastPath: 'off' }, graphqlTarget: 0.5, key: 'S1 graphql fast path off' },
];
const REST_TARGET = 0.7;

const graphqlOf = (gateway: Child) => graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, [{ query: SINGLE_QUERY, check: singleCheck() }]);
/**
 * Apollo Client's default Accept (@apollo/client 4, selectHttpOptionsAndBody.js), as real clients send it: the
 * direct lane before the front door did not take it (yoga's whole handler answered); the GraphQL fast path does since dbb8374.
 */
const APOLLO_CLIENT_ACCEPT = 'application/graphql-response+json,application/json;q=0.9';
const clientAcceptOf = (gateway: Child): HttpTarget => {
  const target = graphqlOf(gateway);
  return { ...target, headers: { ...target.headers, accept: APOLLO_CLIENT_ACCEPT } };
};
const restOf = (gateway: Child): HttpTarget => ({ url: gateway.url, method: 'GET', headers: { authorization: CLIENT_KEY }, cases: [{ path: PATH, check: new BodyCheck(JSON.parse(envelope)) }] });

/** The ratio to the direct upstream and its target, for a row's cells. */
type AgainstDirect = (m: Measurement, target: number) => Pick<Row, 'ratio' | 'target'>;

interface Shape {
  what: string;
  target: number;
  of: (gateway: Child) => HttpTarget;
  /** Where S7 finds the GraphQL figure. */
  key?: string;
}

const shapesOf = (label: string, graphqlGoal: number, key: string, suffix = '', clientAccept = false): Shape[] => [
  { what: `gateway GraphQL transaction(id), ${label}${suffix}`, target: graphqlGoal, of: graphqlOf, key },
  ...(clientAccept ? [{ what: `gateway GraphQL transaction(id), ${label}, Apollo Client's default Accept`, target: graphqlGoal, of: clientAcceptOf }] : []),
  { what: `gateway REST GET /transactions/{id}, ${label}${suffix}`, target: REST_TARGET, of: restOf },
];

/** One variant on the baseline's gateway and the working tree's, both running, measured in turns. */
async function pairedVariant(ctx: ScenarioContext, baseline: Build, variant: Variant, shapes: Shape[], againstDirect: AgainstDirect): Promise<Row[]> {
  const { upstream, log } = ctx;
  return withChild(startGateway(upstream.url, variant, {}, baseline), (before) =>
    withChild(startGateway(upstream.url, variant), async (after) => {
      const rows: Row[] = [];
      for (const shape of shapes) {
        log(`${shape.what}: ${baseline.label} and after in turns`);
        const p = await measurePaired({ build: baseline, target: shape.of(before), server: before }, { build: CURRENT, target: shape.of(after), server: after }, upstream);
        if (shape.key) {
          ctx.shared.set(shape.key, p.after);
          ctx.sharedPairs.set(shape.key, p);
        }
        rows.push(...pairedRows('S1', shape.what, p, baseline, { before: againstDirect(p.before, shape.target), after: againstDirect(p.after, shape.target) }));
        ctx.comparisons.push(pairedComparison('S1', shape.what, p));
      }
      return rows;
    }),
  );
}

export const s1: Scenario = {
  name: 'S1',
  title: 'single resource',
  async run(ctx) {
    const { upstream, shared, log, baseline } = ctx;
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
    const againstDirect: AgainstDirect = (m, target) => {
      const ratio = ratioOf(m.rps.median, direct.rps.median);
      return { ratio: `${times(ratio)} direct`, target: `≥ ${target}× ${verdict(ratio >= target && m.errors.total === 0)}` };
    };
    for (const { label, variant, graphqlTarget: goal, key, clientAccept } of VARIANTS) {
      if (baseline) {
        // Before the front door the GraphQL fast path was the direct lane (DIRECT_LANE), which REST took too.
        const lane = baseline.switches.graphqlFastPath;
        const suffix = variant.graphqlFastPath === 'off' && lane && 'variable' in lane ? `; ${baseline.label}: ${lane.variable}=off, which sent REST through yoga too` : '';
        rows.push(...(await pairedVariant(ctx, baseline, variant, shapesOf(label, goal, key, suffix, clientAccept), againstDirect)));
        continue;
      }
      await withChild(startGateway(upstream.url, variant), async (gateway) => {
        for (const shape of shapesOf(label, goal, key, '', clientAccept)) {
          log(shape.what);
          const m = await measureHttp(shape.of(gateway), { upstream, server: gateway });
          if (shape.key) shared.set(shape.key, m);
          rows.push({ ...httpRow('S1', shape.what, m), ...againstDirect(m, shape.target) });
        }
      });
    }
    return rows;
  },
};
