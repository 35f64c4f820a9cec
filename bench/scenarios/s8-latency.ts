import { procStat, type Child } from '../lib/children.js';
import { SETTINGS, sumErrors, type HttpErrors, type HttpTarget, type Watch } from '../lib/http-load.js';
import {
  measuredClosedLoop,
  measuredOpenLoop,
  remoteGenerator,
  startLoadGenerator,
  type CapacityRun,
  type OpenLoopRun,
} from '../lib/load-generator.js';
import { LATE_MS, type LoadGenerator } from '../lib/open-loop.js';
import { planPlacement, type S8Placement } from '../lib/pinning.js';
import { gatewayGraphql, gatewayRest, restTarget } from '../lib/queries.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { gcTotals, startBareHop, startGateway, startUpstream, type GcTotals } from '../lib/servers.js';
import { fmt, median } from '../lib/stats.js';
import { row, errorsText, verdict, type Row } from '../lib/table.js';

/** Unset: LOAD_SHARE of the capacity measured first. */
const FIXED_RATE = process.env.BENCH_S8_RATE ? Number(process.env.BENCH_S8_RATE) : undefined;
const LOAD_SHARE = 0.5;
const SECONDS = Number(process.env.BENCH_S8_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_S8_ROUNDS ?? 3);
const DELAY_MS = Number(process.env.BENCH_S8_DELAY_MS ?? 5);
const PIN = (process.env.BENCH_S8_PIN ?? 'on') !== 'off';
/** Requests in flight while the capacity is measured: far more than the upstream's delay needs at any rate one core carries. */
const CAPACITY_IN_FLIGHT = 64;
const GOAL_P99_ADDED_MS = 2;
const niceOf = (pid: number) => Number(procStat(pid)[16]);
/** Below this share of its core while the closed loop saturated it, the gateway was not what bounded the capacity. */
const BOUND_CORES = 0.9;
/** Late sends above this share of a round void it: its p99 would be the generator's, not the server's. */
const LATE_SHARE_LIMIT = 0.01;
const GRAPHQL_PATH = "gateway GraphQL transaction(id) with variables, cache off, Apollo Client's default Accept (S8's request)";

/** A path of the rounds, driven from the generator process; `gc`: the gateway's totals before and after each measured run (the hop has none). */
async function newPath(what: string, generatorChild: Child, target: HttpTarget, watch: Watch, gc?: GcRuns) {
  const generator = await remoteGenerator(generatorChild, target);
  return { what, generator, watch, runs: [] as OpenLoopRun[], warmUpErrors: [] as HttpErrors[], gc };
}
type Path = Awaited<ReturnType<typeof newPath>>;
type GcRuns = Array<[before: GcTotals, after: GcTotals]>;

/** The pinned gateway's req/s for S8's request, closed loop: a warm-up, then SETTINGS.runs runs, the median. */
async function measureCapacity(generator: LoadGenerator, gateway: Child, log: (message: string) => void) {
  log(
    `capacity: closed loop, ${CAPACITY_IN_FLIGHT} in flight, ${SETTINGS.warmupSeconds} s warm-up + ${SETTINGS.runs} × ${SETTINGS.runSeconds} s`,
  );
  const warmUp = await generator.closedLoop(CAPACITY_IN_FLIGHT, SETTINGS.warmupSeconds);
  const runs: CapacityRun[] = [];
  for (let run = 0; run < SETTINGS.runs; run += 1)
    runs.push(await measuredClosedLoop(generator, CAPACITY_IN_FLIGHT, SETTINGS.runSeconds, gateway));
  const rps = median(runs.map((r) => r.rps));
  const cores = median(runs.map((r) => r.serverCores));
  log(`capacity: ${fmt(rps)} req/s (${runs.map((r) => fmt(r.rps)).join(', ')}), gateway ${fmt(cores, 2)} cores`);
  return { runs, errors: [warmUp.errors, ...runs.map((r) => r.errors)], rps };
}

/** Round after round, each path warmed up then measured in turn at `rate`; the order flips every round. */
async function measureRounds(paths: Path[], rate: number, log: (message: string) => void): Promise<void> {
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const path of round % 2 === 0 ? paths : [...paths].reverse()) {
      log(`round ${round + 1}/${ROUNDS}: ${path.what}`);
      path.warmUpErrors.push((await path.generator.openLoop(rate, SETTINGS.warmupSeconds)).errors);
      const gcBefore = path.gc && (await gcTotals(path.watch.server!));
      path.runs.push(await measuredOpenLoop(path.generator, rate, SECONDS, path.watch));
      if (gcBefore) path.gc!.push([gcBefore, await gcTotals(path.watch.server!)]);
    }
  }
}

const ms = (value: number) => fmt(value, 2);
const allErrorsOf = (p: Path) => [...p.warmUpErrors, ...p.runs.map((r) => r.errors)];
const lateOf = (p: Path): number => p.runs.reduce((sum, r) => sum + r.late, 0);

function voidOf(path: Path, hop: Path | undefined): string | undefined {
  const hopErrors = hop !== undefined && sumErrors(allErrorsOf(hop)).total > 0;
  const sides = [[path, 'this path'] as const, ...(hop ? [[hop, 'the hop'] as const] : [])];
  const behind = sides.filter(([p]) => p.runs.some((r) => r.late > LATE_SHARE_LIMIT * r.scheduled));
  const reasons = [
    (hopErrors || sumErrors(allErrorsOf(path)).total > 0) && (hopErrors ? "errors (the hop's count too)" : 'errors'),
    behind.length > 0 &&
      `generator behind schedule: ${behind.map(([p, where]) => `${lateOf(p)} sends > ${LATE_MS} ms late on ${where}`).join(', ')}`,
  ].filter(Boolean);
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}

type Quantile = 'p50' | 'p99' | 'p999';
/** "p50 … / p99 … / p99.9 … ms" of `of` each quantile. */
const quantiles = (of: (key: Quantile) => number) => `p50 ${ms(of('p50'))} / p99 ${ms(of('p99'))} / p99.9 ${ms(of('p999'))} ms`;

function pathRow(path: Path, hop: Path | undefined, rate: number, setting: string, placement: S8Placement): Row {
  const medianOf = (pick: (r: OpenLoopRun, i: number) => number) => median(path.runs.map(pick));
  const perRound = (pick: (r: OpenLoopRun, i: number) => number | string) => path.runs.map(pick).join(', ');
  const own = (key: Quantile) => medianOf((r) => r[key]);
  const added = (key: Quantile) => medianOf((r, i) => r[key] - hop!.runs[i]![key]);
  const voided = voidOf(path, hop);
  const cpuUs = medianOf((r) => r.serverCpuUs);
  const calls = medianOf((r) => r.callsPerRequest ?? Number.NaN);
  return row('S8', path.what, {
    value: quantiles(own),
    p99: ms(own('p99')),
    ratio: hop ? `added ${quantiles(added)}` : '',
    target: hop ? `p99 added ≤ ${GOAL_P99_ADDED_MS} ms: ${voided ? 'VOID' : verdict(added('p99') <= GOAL_P99_ADDED_MS)}` : '',
    calls: fmt(calls, 2),
    errors: errorsText(sumErrors(allErrorsOf(path))),
    voided,
    notes: [
      // Every row says it when the servers were not pinned; the capacity row gives the placement either way.
      !placement.pinned && placement.text,
      `${ROUNDS} rounds × ${SECONDS} s at ${fmt(rate)} req/s (${setting}), ${fmt(path.runs[0]?.scheduled ?? 0)} sends each, ` +
        `upstream answers after ${DELAY_MS} ms`,
      `p99 per round ${perRound((r) => ms(r.p99))} ms`,
      !!hop && `p99 added per round ${perRound((r, i) => ms(r.p99 - hop.runs[i]!.p99))} ms`,
      !!hop && `p99.9 added per round ${perRound((r, i) => ms(r.p999 - hop.runs[i]!.p999))} ms`,
      `max ${ms(Math.max(...path.runs.map((r) => r.max)))} ms`,
      `generator: ${fmt(lateOf(path))} of ${fmt(path.runs.reduce((sum, r) => sum + r.scheduled, 0))} sends left > ${LATE_MS} ms late ` +
        `(per round ${perRound((r) => r.late)}; a round voids above ${LATE_SHARE_LIMIT * 100}%), ` +
        `max send lag ${ms(Math.max(...path.runs.map((r) => r.maxSendLagMs)))} ms, ` +
        `ELU ${fmt(medianOf((r) => r.loadgenElu) * 100)}%`,
      `server CPU ${fmt(cpuUs)} µs/request, ${fmt((cpuUs * rate) / 1e4)}% of a core`,
      !!path.gc && gcText(path.gc),
    ],
  });
}

/** The gateway's collections over the measured runs, from its prom-client histogram (bounds 1 ms and 10 ms). */
function gcText(gc: GcRuns): string {
  const total = (key: keyof GcTotals) => gc.reduce((sum, [before, after]) => sum + after[key] - before[key], 0);
  return (
    `gateway GC over the runs: ${fmt(total('count'))} collections, ${fmt(total('seconds') * 1e3)} ms in all ` +
    `(${fmt((total('seconds') * 1e3) / (gc.length * SECONDS), 1)} ms a second), ` +
    `${fmt(total('over1ms'))} over 1 ms, ${fmt(total('over10ms'))} over 10 ms`
  );
}

function capacityRow(capacity: Awaited<ReturnType<typeof measureCapacity>>, rate: number, placement: S8Placement, priority: string): Row {
  const rps = capacity.runs.map((r) => r.rps);
  const cores = median(capacity.runs.map((r) => r.serverCores));
  const errors = sumErrors(capacity.errors);
  return row('S8', 'capacity: gateway GraphQL transaction(id), cache off, closed loop (sets the open-loop rate)', {
    value: `${fmt(capacity.rps)} [${fmt(Math.min(...rps))}–${fmt(Math.max(...rps))}]`,
    errors: errorsText(errors),
    voided: errors.total > 0 ? 'errors' : undefined,
    notes: [
      placement.text,
      priority,
      `closed loop, ${CAPACITY_IN_FLIGHT} requests in flight, ` +
        `${SETTINGS.runs} × ${SETTINGS.runSeconds} s after ${SETTINGS.warmupSeconds} s of warm-up`,
      `gateway CPU ${fmt(cores, 2)} cores, ${fmt(median(capacity.runs.map((r) => r.serverCpuUs)))} µs/request`,
      // Saturated by the closed loop, a gateway with its core to itself uses all of it; less means others took the rest.
      cores < BOUND_CORES &&
        `CAPACITY LOW: the saturated gateway used less than ${BOUND_CORES} of a core, ` +
          `other processes took the rest, so the rate is lower than the gateway's half`,
      `generator ELU ${fmt(median(capacity.runs.map((r) => r.loadgenElu)) * 100)}%`,
      FIXED_RATE === undefined
        ? `the open-loop rate is ${LOAD_SHARE * 100}% of the median: ${fmt(rate)} req/s`
        : `the open-loop rate is BENCH_S8_RATE's ${fmt(rate)} req/s, ${fmt((rate / capacity.rps) * 100)}% of the median`,
    ],
  });
}

export const s8: Scenario = {
  name: 'S8',
  title:
    `latency at ${FIXED_RATE === undefined ? `${LOAD_SHARE * 100}% of the pinned gateway's capacity` : `${FIXED_RATE} req/s`} ` +
    `(open loop), upstream answering after ${DELAY_MS} ms: gateway vs bare hop`,
  async run({ log }) {
    const placement = planPlacement(PIN);
    log(placement.text);
    return withChild(startLoadGenerator(placement.generator), (generatorChild) =>
      withChild(startUpstream({ delayMs: DELAY_MS, placement: placement.upstream }), (upstream) =>
        withChild(startBareHop(upstream.url, placement.server), (bare) =>
          withChild(startGateway(upstream.url, { cacheTtlMs: 0 }, {}, placement.server), async (gateway) => {
            // What each got: `nice` runs a child at the bench's own priority where raising it is not allowed.
            const priority =
              `nice: gateway ${niceOf(gateway.pid)}, hop ${niceOf(bare.pid)}, upstream ${niceOf(upstream.pid)}, ` +
              `generator ${niceOf(generatorChild.pid)} (asked ${placement.server.nice}, ${placement.generator.nice} for the generator)`;
            const path = (what: string, target: HttpTarget, server: Child, gc?: GcRuns) =>
              newPath(what, generatorChild, target, { upstream, server }, gc);
            const hop = await path('bare Node proxy hop GET /transactions/{id} (baseline: no gateway work)', restTarget(bare.url), bare);
            const rest = await path('gateway REST GET /transactions/{id}, cache off', gatewayRest(gateway.url), gateway, []);
            const graphql = await path(GRAPHQL_PATH, gatewayGraphql(gateway.url), gateway, []);
            const capacity = await measureCapacity(graphql.generator, gateway, log);
            const rate = FIXED_RATE ?? Math.max(1, Math.round(capacity.rps * LOAD_SHARE));
            const setting = FIXED_RATE === undefined ? `${LOAD_SHARE * 100}% of the capacity` : 'BENCH_S8_RATE';
            log(`open loop at ${fmt(rate)} req/s (${setting}); ${priority}`);
            await measureRounds([hop, rest, graphql], rate, log);
            await Promise.all([hop, rest, graphql].map((p) => p.generator.close()));
            return [
              capacityRow(capacity, rate, placement, priority),
              pathRow(hop, undefined, rate, setting, placement),
              pathRow(rest, hop, rate, setting, placement),
              pathRow(graphql, hop, rate, setting, placement),
            ];
          }),
        ),
      ),
    );
  },
};
