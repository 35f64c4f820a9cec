import { UPSTREAM_KEY } from '../lib/contract-upstream.js';
import { httpSession, SETTINGS, type HttpSession, type HttpTarget, type Measurement, type RunFigures } from '../lib/http-load.js';
import { gatewayGraphql, gatewayRest, restTarget } from '../lib/queries.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { startBareHop, startGateway, type Variant } from '../lib/servers.js';
import { fmt, median } from '../lib/stats.js';
import { httpRow, times, type Row } from '../lib/table.js';

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

const GQL = 'gateway GraphQL transaction(id: $id)';
const REST = 'gateway REST GET /transactions/{id}';
const HITS = 'cache hits (CACHE_TTL_MS 1 h)';
const BROWSER = "a browser's request (Origin)";
const DIRECT = 'the upstream straight, GET /transactions/{id} (for reading: how far the upstream is from limiting the hop)';

/** One gateway per variant, its shapes measured one after the other, each in turns with the hop. */
const GROUPS: Array<{ variant: Variant; shapes: Shape[] }> = [
  {
    variant: { cacheTtlMs: 0 },
    shapes: [
      { what: `${REST} (passthrough), cache off`, goal: 0.8, of: gatewayRest },
      // Judged in S7 against Mercurius on the same upstream, the peer ahead of us; shown here against the hop for reading.
      { what: `${GQL}, cache off`, of: gatewayGraphql, key: 'S1 graphql cache off' },
      { what: `${GQL}, cache off, ${BROWSER}`, of: browserGraphql, key: 'S1 graphql browser' },
    ],
  },
  {
    // The warm-up sends the 60 ids in order before anything else, so the measured runs find every id cached.
    variant: { cacheTtlMs: CACHE_HOUR_MS },
    shapes: [
      { what: `${GQL}, ${HITS}`, goal: 1.5, of: gatewayGraphql, hits: true, key: 'S1 graphql cache on' },
      { what: `${GQL}, ${HITS}, ${BROWSER}`, of: browserGraphql, hits: true },
      { what: `${REST}, ${HITS}`, goal: 2, of: gatewayRest, hits: true },
    ],
  },
  {
    variant: { cacheTtlMs: 0, compiledExecution: false },
    shapes: [{ what: `${GQL}, cache off, compiled execution off (graphql-js executes every request)`, of: gatewayGraphql }],
  },
  {
    variant: { cacheTtlMs: CACHE_HOUR_MS, responseCache: false },
    shapes: [{ what: `${GQL}, cache hits, response cache off (entity cache only: executed every time)`, of: gatewayGraphql, hits: true }],
  },
];

/** Upstream calls in the measured runs of a variant that should have answered every request from its cache. */
const missText = (m: Measurement): string =>
  m.callsPerQuery !== undefined && m.callsPerQuery > 0.005 ? `; NOT all cache hits (${fmt(m.callsPerQuery, 3)} upstream calls/answer)` : '';

/** Above this event-loop utilisation of the parent, the load generator, not the server, set the pace. */
const LOADGEN_SATURATED = 0.95;
const cpuPerAnswer = (f: RunFigures) => (f.serverCores ?? Number.NaN) / f.rps;

/** `subject` warmed up, then BENCH_PAIRED_RUNS rounds of a hop run and a subject run (hop first, then subject first, …); its row. */
async function againstHop(hop: HttpSession, subject: HttpSession, what: string, goal?: number, hits = false): Promise<Row> {
  await subject.warmUp();
  const hopErrorsBefore = hop.result().errors.total;
  const rounds: Array<{ hop: RunFigures; subject: RunFigures }> = [];
  for (let round = 0; round < SETTINGS.pairedRuns; round += 1) {
    const first = round % 2 === 0 ? await hop.run() : await subject.run();
    const second = round % 2 === 0 ? await subject.run() : await hop.run();
    rounds.push(round % 2 === 0 ? { hop: first, subject: second } : { hop: second, subject: first });
  }
  const hopErrors = hop.result().errors.total - hopErrorsBefore;
  const m = subject.result();
  const rps = rounds.map((r) => r.subject.rps / r.hop.rps);
  const ratio = [
    `${times(median(rps))} hop (rounds ${fmt(Math.min(...rps), 2)}–${fmt(Math.max(...rps), 2)})`,
    `CPU/answer ${fmt(m.cpuPerRequestUs)} µs, ${times(median(rounds.map((r) => cpuPerAnswer(r.subject) / cpuPerAnswer(r.hop))))} the hop's`,
    rounds.some((r) => r.subject.loadgenElu > LOADGEN_SATURATED) && 'load generator saturated in its runs: a lower bound',
    rounds.some((r) => r.hop.loadgenElu > LOADGEN_SATURATED) && "load generator saturated in the hop's runs: an upper bound",
  ].filter(Boolean);
  const clean = m.errors.total === 0 && hopErrors === 0;
  return {
    ...httpRow('S1', what, m),
    ratio: `${ratio.join('; ')}${hits ? missText(m) : ''}`,
    target: goal === undefined ? '' : `≥ ${goal}× hop: ${clean ? (median(rps) >= goal ? 'met' : 'NOT met') : 'VOID (errors)'}`,
    ...(hopErrors > 0 ? { voided: `the bare hop had ${hopErrors} errors in these rounds` } : {}),
  };
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
      const direct = httpSession(restTarget(upstream.url, { authorization: UPSTREAM_KEY }), { upstream, server: upstream });
      const rows = [await againstHop(hop, direct, DIRECT)];
      for (const { variant, shapes } of GROUPS) {
        await withChild(startGateway(upstream.url, variant), async (gateway) => {
          for (const shape of shapes) {
            log(`${shape.what}: in turns with the hop`);
            const session = httpSession(shape.of(gateway.url), { upstream, server: gateway });
            rows.push(await againstHop(hop, session, shape.what, shape.goal, shape.hits));
            if (shape.key) ctx.shared.set(shape.key, session.result());
          }
        });
      }
      const h = hop.result();
      const hopRow = httpRow('S1', 'bare Node proxy hop GET /transactions/{id} (the reference: one more HTTP hop, no gateway work)', h, {
        ratio: `1× (reference); CPU/answer ${fmt(h.cpuPerRequestUs)} µs; ${h.runs.length} runs, in turns with each figure below`,
      });
      return [hopRow, ...rows];
    });
  },
};
