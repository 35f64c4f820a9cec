import os from 'node:os';
import type { Child } from '../lib/children.js';
import { BodyCheck } from '../lib/expect.js';
import { APOLLO_CLIENT_ACCEPT, graphqlTarget, SETTINGS, type HttpTarget } from '../lib/http-load.js';
import { LATE_MS, openLoopSession, type OpenLoopErrors, type OpenLoopRun, type OpenLoopSession } from '../lib/open-loop.js';
import { ROTATED_IDS, rotatedSingleCases, transactionEnvelope } from '../lib/queries.js';
import type { Scenario } from '../lib/scenario.js';
import { withChild } from '../lib/scenario.js';
import { CLIENT_KEY, startBareHop, startGateway, startUpstream, type Upstream } from '../lib/servers.js';
import { fmt, median } from '../lib/stats.js';
import type { Row } from '../lib/table.js';

/*
 * S8: latency at a fixed rate (open loop, lib/open-loop.ts) through the gateway, REST and GraphQL, and through the bare
 * Node proxy hop, all to an upstream of their own that answers after BENCH_S8_DELAY_MS. The three take turns, round
 * after round (hop, REST, GraphQL, then the other way round), so drift of the machine lands on all of them; what the
 * gateway adds is its pXX minus the hop's pXX in the same round, median over the rounds. Goal: p99 added ≤ 2 ms.
 */

const RATE = Number(process.env.BENCH_S8_RATE ?? 2_000);
const SECONDS = Number(process.env.BENCH_S8_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_S8_ROUNDS ?? 3);
const DELAY_MS = Number(process.env.BENCH_S8_DELAY_MS ?? 5);
const GOAL_P99_ADDED_MS = 2;
/** Late sends above this share of a round void it: its tail would be the generator's, not the server's (p99.9 needs < 0.1%). */
const LATE_SHARE_LIMIT = 0.001;

// S1's 60 ids in turn (lib/queries.ts): one id comes back every 60 requests (30 ms at 2,000 req/s), long after its
// answer, so coalescing cannot answer for the gateway; upstream calls per request show it (≈ 1).
// The hop forwards the upstream's bytes; the gateway's REST answer is judged by content (as in S1).
const restCases = (check: (envelope: string) => BodyCheck) => ROTATED_IDS.map((id) => ({ path: `/transactions/${id}`, check: check(transactionEnvelope(id)) }));

const hopTarget = (hop: Child): HttpTarget => ({ url: hop.url, method: 'GET', headers: {}, cases: restCases((envelope) => BodyCheck.exact(envelope)) });
const restTarget = (gateway: Child): HttpTarget => ({
  url: gateway.url,
  method: 'GET',
  headers: { authorization: CLIENT_KEY },
  cases: restCases((envelope) => new BodyCheck(JSON.parse(envelope))),
});
/** GraphQL as S1 sends it: `transaction(id: $id)` with the id in variables, and Apollo Client's Accept. */
const graphqlOf = (gateway: Child): HttpTarget => graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, rotatedSingleCases(), APOLLO_CLIENT_ACCEPT);

interface Path {
  what: string;
  session: OpenLoopSession;
  runs: OpenLoopRun[];
  warmUpErrors: OpenLoopErrors[];
}

const newPath = (what: string, target: HttpTarget, upstream: Upstream, server: Child): Path => ({ what, session: openLoopSession(target, RATE, { upstream, server }), runs: [], warmUpErrors: [] });

/** Round after round, each path warmed up then measured in turn; the order flips every round. */
async function measureRounds(paths: Path[], log: (message: string) => void): Promise<void> {
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const path of round % 2 === 0 ? paths : [...paths].reverse()) {
      log(`round ${round + 1}/${ROUNDS}: ${path.what}`);
      path.warmUpErrors.push(await path.session.warmUp(SETTINGS.warmupSeconds));
      path.runs.push(await path.session.run(SECONDS));
    }
  }
}

const errorsOf = (p: Path): number => [...p.warmUpErrors, ...p.runs.map((r) => r.errors)].reduce((sum, e) => sum + e.total, 0);
const lateOf = (p: Path): number => p.runs.reduce((sum, r) => sum + r.late, 0);
const behindSchedule = (p: Path): boolean => p.runs.some((r) => r.late > LATE_SHARE_LIMIT * r.scheduled);
const ms = (value: number) => fmt(value, 2);

function errorsText(p: Path): string {
  const all = [...p.warmUpErrors, ...p.runs.map((r) => r.errors)];
  const sum = (key: keyof OpenLoopErrors) => all.reduce((total, e) => total + e[key], 0);
  const parts = [sum('non2xx') && `${sum('non2xx')} non-2xx`, sum('mismatches') && `${sum('mismatches')} mismatched`, sum('connection') && `${sum('connection')} conn`, sum('timeouts') && `${sum('timeouts')} timeouts`];
  return parts.filter(Boolean).join(', ') || '0';
}

function voidOf(path: Path, hop: Path | undefined): string | undefined {
  const reasons: string[] = [];
  if (errorsOf(path) > 0 || (hop && errorsOf(hop) > 0)) reasons.push(hop && errorsOf(hop) > 0 ? 'errors (the hop\'s count too)' : 'errors');
  const sides: Array<[Path | undefined, string]> = [[path, 'this path'], [hop, 'the hop']];
  const behind = sides.filter((side): side is [Path, string] => side[0] !== undefined && behindSchedule(side[0]));
  if (behind.length > 0) reasons.push(`generator behind schedule: ${behind.map(([p, where]) => `${lateOf(p)} sends > ${LATE_MS} ms late on ${where}`).join(', ')}`);
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}

function row(path: Path, hop: Path | undefined): Row {
  const pick = (key: 'p50' | 'p99' | 'p999') => median(path.runs.map((r) => r[key]));
  const added = (key: 'p50' | 'p99' | 'p999') => median(path.runs.map((r, i) => r[key] - hop!.runs[i]![key]));
  const voided = voidOf(path, hop);
  const notes = [
    `${ROUNDS} rounds × ${SECONDS} s at ${fmt(RATE)} req/s, ${fmt(path.runs[0]?.scheduled ?? 0)} sends each, upstream answers after ${DELAY_MS} ms`,
    `p99 per round ${path.runs.map((r) => ms(r.p99)).join(', ')} ms`,
    ...(hop ? [`p99 added per round ${path.runs.map((r, i) => ms(r.p99 - hop.runs[i]!.p99)).join(', ')} ms`] : []),
    `max ${ms(Math.max(...path.runs.map((r) => r.max)))} ms`,
    `late sends ${lateOf(path)} (max send lag ${ms(Math.max(...path.runs.map((r) => r.maxSendLagMs)))} ms)`,
    `server CPU ${fmt(median(path.runs.map((r) => r.serverCpuUs)))} µs/request`,
    `loadgen ELU ${fmt(median(path.runs.map((r) => r.loadgenElu)) * 100)}%`,
  ];
  const addedP99 = hop ? added('p99') : Number.NaN;
  return {
    scenario: 'S8',
    variant: path.what,
    value: `p50 ${ms(pick('p50'))} / p99 ${ms(pick('p99'))} / p99.9 ${ms(pick('p999'))} ms`,
    p99: ms(pick('p99')),
    ratio: hop ? `added p50 ${ms(added('p50'))} / p99 ${ms(addedP99)} / p99.9 ${ms(added('p999'))} ms` : '',
    target: hop ? `p99 added ≤ ${GOAL_P99_ADDED_MS} ms: ${voided ? 'void' : addedP99 <= GOAL_P99_ADDED_MS ? 'met' : 'not met'}` : '',
    calls: fmt(median(path.runs.map((r) => r.callsPerRequest ?? Number.NaN)), 2),
    errors: errorsText(path),
    notes: notes.join('; '),
    ...(voided ? { voided } : {}),
  };
}

export const s8: Scenario = {
  name: 'S8',
  title: `latency at ${RATE} req/s (open loop), upstream answering after ${DELAY_MS} ms: gateway vs bare hop`,
  async run({ log }) {
    return withChild(startUpstream({ delayMs: DELAY_MS }), (upstream) =>
      withChild(startBareHop(upstream.url), (bare) =>
        withChild(startGateway(upstream.url, { cacheTtlMs: 0 }), async (gateway) => {
          const hop = newPath('bare Node proxy hop GET /transactions/{id} (baseline: no gateway work)', hopTarget(bare), upstream, bare);
          const rest = newPath('gateway REST GET /transactions/{id}, cache off', restTarget(gateway), upstream, gateway);
          const graphql = newPath("gateway GraphQL transaction(id) with variables, cache off, Apollo Client's default Accept", graphqlOf(gateway), upstream, gateway);
          // Raised once the servers run (children inherit it): only the generator is scheduled first.
          const restore = raisePriority(log);
          try {
            await measureRounds([hop, rest, graphql], log);
          } finally {
            restore();
            await Promise.all([hop, rest, graphql].map((p) => p.session.close()));
          }
          return [row(hop, undefined), row(rest, hop), row(graphql, hop)];
        }),
      ),
    );
  },
};

/** Nice value of the load generator while it measures (lower runs first; the servers stay at theirs). */
const GENERATOR_PRIORITY = -10;

/**
 * The generator must send on time for the servers' tails to be theirs: on 2
 * shared cores it is scheduled first while S8 measures. Raising a priority
 * needs root (or CAP_SYS_NICE); without it late sends say what happened.
 */
function raisePriority(log: (message: string) => void): () => void {
  const before = os.getPriority();
  try {
    os.setPriority(GENERATOR_PRIORITY);
  } catch {
    log(`could not raise the generator's priority to ${GENERATOR_PRIORITY}: late sends may void figures`);
    return () => {};
  }
  return () => os.setPriority(before);
}
