import { CURRENT } from '../lib/baseline.js';
import { UPSTREAM_KEY } from '../lib/contract-upstream.js';
import { httpSession, type HttpSession, type HttpTarget, type Measurement } from '../lib/http-load.js';
import { hopCells, measureWithHop, pairedComparison, pairedOf, pairedRows } from '../lib/paired.js';
import { gatewayGraphql, gatewayRest, restTarget } from '../lib/queries.js';
import type { Scenario, ScenarioContext } from '../lib/scenario.js';
import { withChild, withChildren } from '../lib/scenario.js';
import { startBareHop, startGateway, type Variant } from '../lib/servers.js';
import { fmt } from '../lib/stats.js';
import { httpRow, type Row } from '../lib/table.js';

/** Long enough that no entry expires while S1 runs, so every measured answer is a hit. */
const CACHE_HOUR_MS = 3_600_000;

/** What a dashboard's page sends: the same POST with Apollo Client's Accept, and its own origin (same-origin pages send one too). */
const browserGraphql = (url: string) => {
  const target = gatewayGraphql(url);
  return { ...target, headers: { ...target.headers, origin: new URL(url).origin } };
};

interface Shape {
  what: string;
  /** Goal as a multiple of the hop's req/s; none for figures shown for reading. */
  goal?: number;
  of: (url: string) => HttpTarget;
  /** Every answer should be a cache hit: upstream calls in the measured runs are pointed out. */
  hits?: boolean;
  /** Where S7 finds the figure (keep stable: S7 reuses 'S1 graphql cache off'). */
  key?: string;
}

/** One gateway per variant, its shapes measured one after the other, each in turns with the hop. */
const GROUPS: Array<{ variant: Variant; shapes: Shape[] }> = [
  {
    variant: { cacheTtlMs: 0 },
    shapes: [
      { what: 'gateway REST GET /transactions/{id} (passthrough), cache off', goal: 0.8, of: gatewayRest },
      // Judged in S7 against Mercurius on the same upstream, the peer ahead of us; shown here against the hop for reading.
      { what: 'gateway GraphQL transaction(id: $id), cache off', of: gatewayGraphql, key: 'S1 graphql cache off' },
      {
        what: "gateway GraphQL transaction(id: $id), cache off, a browser's request (Origin)",
        of: browserGraphql,
        key: 'S1 graphql browser',
      },
    ],
  },
  {
    // The warm-up sends the 60 ids in order before anything else, so the measured runs find every id cached.
    variant: { cacheTtlMs: CACHE_HOUR_MS },
    shapes: [
      {
        what: 'gateway GraphQL transaction(id: $id), cache hits (CACHE_TTL_MS 1 h)',
        goal: 1.5,
        of: gatewayGraphql,
        hits: true,
        key: 'S1 graphql cache on',
      },
      {
        what: "gateway GraphQL transaction(id: $id), cache hits (CACHE_TTL_MS 1 h), a browser's request (Origin)",
        of: browserGraphql,
        hits: true,
      },
      { what: 'gateway REST GET /transactions/{id}, cache hits (CACHE_TTL_MS 1 h)', goal: 2, of: gatewayRest, hits: true },
    ],
  },
  {
    variant: { cacheTtlMs: 0, compiledExecution: 'off' },
    shapes: [
      {
        what: 'gateway GraphQL transaction(id: $id), cache off, compiled execution off (graphql-js executes every request)',
        of: gatewayGraphql,
      },
    ],
  },
  {
    variant: { cacheTtlMs: CACHE_HOUR_MS, responseCache: 'off' },
    shapes: [
      {
        what: 'gateway GraphQL transaction(id: $id), cache hits, response cache off (entity cache only: executed every time)',
        of: gatewayGraphql,
        hits: true,
      },
    ],
  },
];

/** Upstream calls in the measured runs of a variant that should have answered every request from its cache. */
const missText = (m: Measurement): string =>
  m.callsPerQuery !== undefined && m.callsPerQuery > 0.005 ? `; NOT all cache hits (${fmt(m.callsPerQuery, 3)} upstream calls/answer)` : '';

/** One gateway of the variant per build, each shape in turns with the hop (and with the other build's, with a baseline). */
async function measureGroup(ctx: ScenarioContext, hop: HttpSession, { variant, shapes }: (typeof GROUPS)[number]): Promise<Row[]> {
  const { upstream, log, baseline } = ctx;
  const builds = baseline ? [baseline, CURRENT] : [CURRENT];
  return withChildren(
    builds.map((build) => () => startGateway(upstream.url, variant, {}, build)),
    async (gateways) => {
      const rows: Row[] = [];
      for (const shape of shapes) {
        log(`${shape.what}: in turns with the hop${baseline ? `, ${baseline.label} and after` : ''}`);
        const sides = await measureWithHop(
          hop,
          gateways.map((g) => httpSession(shape.of(g.url), { upstream, server: g })),
        );
        const cellsOf = (side: (typeof sides)[number], goal?: number) => {
          const cells = hopCells(side.against, side.m, goal);
          return { ...cells, ratio: `${cells.ratio}${shape.hits ? missText(side.m) : ''}` };
        };
        const after = sides.at(-1)!;
        if (shape.key) ctx.shared.set(shape.key, after.m);
        if (!baseline) {
          rows.push({ ...httpRow('S1', shape.what, after.m), ...cellsOf(after, shape.goal) });
          continue;
        }
        const before = sides[0]!;
        const p = pairedOf(
          before.m,
          after.m,
          before.rounds.map((r) => r[2]!.rps / r[1]!.rps),
        );
        if (shape.key) ctx.sharedPairs.set(shape.key, p);
        rows.push(...pairedRows('S1', shape.what, p, baseline, { before: cellsOf(before), after: cellsOf(after, shape.goal) }));
        ctx.comparisons.push(pairedComparison('S1', shape.what, p));
      }
      return rows;
    },
  );
}

export const s1: Scenario = {
  name: 'S1',
  title: 'single resource, 60 ids in rotation, against the bare hop',
  async run(ctx) {
    const { upstream, log } = ctx;
    return withChild(startBareHop(upstream.url), async (bare) => {
      // One hop session for the whole scenario: its row gives every run it made, in turns with each figure below.
      const hop = httpSession(restTarget(bare.url), { upstream, server: bare });
      log('bare proxy hop: warm-up');
      await hop.warmUp();
      log('the upstream straight: in turns with the hop');
      const [direct] = await measureWithHop(hop, [
        httpSession(restTarget(upstream.url, { authorization: UPSTREAM_KEY }), { upstream, server: upstream }),
      ]);
      const rows: Row[] = [
        {
          ...httpRow(
            'S1',
            'the upstream straight, GET /transactions/{id} (for reading: how far the upstream is from limiting the hop)',
            direct!.m,
          ),
          ...hopCells(direct!.against, direct!.m),
        },
      ];
      for (const group of GROUPS) {
        rows.push(...(await measureGroup(ctx, hop, group)));
      }
      const h = hop.result();
      const hopRow = httpRow('S1', 'bare Node proxy hop GET /transactions/{id} (the reference: one more HTTP hop, no gateway work)', h, {
        ratio: `1× (reference); CPU/answer ${fmt(h.cpuPerRequestUs)} µs; ${h.runs.length} runs, in turns with each figure below`,
      });
      return [hopRow, ...rows];
    });
  },
};
