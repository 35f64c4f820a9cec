import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import type { Child } from './children.js';
import type { BodyCheck } from './expect.js';
import { contractCalls, type Upstream } from './servers.js';
import { median } from './stats.js';

export const SETTINGS = {
  connections: Number(process.env.BENCH_CONNECTIONS ?? 32),
  warmupSeconds: Number(process.env.BENCH_WARMUP_S ?? 1),
  runSeconds: Number(process.env.BENCH_RUN_S ?? 3),
  runs: 3,
  /** S1's rounds in turns with the bare hop; even, so each side goes first equally often. */
  pairedRuns: Number(process.env.BENCH_PAIRED_RUNS ?? 6),
};

/** `cases`: request shapes that rotate (each client takes the next in turn). */
export interface HttpTarget {
  url: string;
  method: 'GET' | 'POST' | 'PUT';
  headers: Record<string, string>;
  cases: Array<{ path: string; body?: string; check: BodyCheck }>;
  /** Requests in flight at once; @default BENCH_CONNECTIONS */
  connections?: number;
}

/** What a run watches besides its answers: the upstream's calls, the measured child's CPU. */
export interface Watch {
  upstream?: Upstream;
  server?: Child;
}

export type HttpErrors = ReturnType<typeof errorsOf>;
export type HttpSession = ReturnType<typeof httpSession>;
export type RunFigures = Awaited<ReturnType<HttpSession['run']>>;
export type Measurement = ReturnType<HttpSession['result']>;

export const errorsOf = (non2xx: number, mismatches: number, connection: number, timeouts: number) => ({
  non2xx,
  mismatches,
  connection,
  timeouts,
  total: non2xx + mismatches + connection + timeouts,
});

/** Errors of several runs together. */
export function sumErrors(all: HttpErrors[]): HttpErrors {
  const sum = (key: keyof HttpErrors) => all.reduce((total, e) => total + e[key], 0);
  return errorsOf(sum('non2xx'), sum('mismatches'), sum('connection'), sum('timeouts'));
}

/** One autocannon run and its errors; non-2xx statuses are counted into `statuses`. */
async function once(target: HttpTarget, seconds: number, statuses = new Map<number, number>()) {
  let next = 0;
  let mismatches = 0;
  // The case index a client is on; autocannon types the context as a bare object.
  type Context = { i?: number };
  const verify = (status: number, body: string, context: object) => {
    if (status < 200 || status >= 300) {
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      return;
    }
    const check = target.cases[(context as Context).i ?? 0]!.check;
    if (!check.matches(body)) mismatches += 1;
  };
  const single = target.cases.length === 1;
  const requests: autocannon.Request[] = single
    ? [{ method: target.method, path: target.cases[0]!.path, body: target.cases[0]!.body, onResponse: verify }]
    : [
        {
          method: target.method,
          // Rotation: the case index travels in the client's context to the matching onResponse (pipelining 1).
          setupRequest: (request: autocannon.Request, context: object) => {
            const i = next++ % target.cases.length;
            (context as Context).i = i;
            const chosen = target.cases[i]!;
            return { ...request, path: chosen.path, body: chosen.body ?? request.body };
          },
          onResponse: verify,
        },
      ];
  const result = await autocannon({
    url: target.url,
    connections: target.connections ?? SETTINGS.connections,
    duration: seconds,
    headers: target.headers,
    requests,
  });
  return { result, errors: errorsOf(result.non2xx, mismatches, result.errors - result.timeouts, result.timeouts) };
}

/** What a closed loop of `inFlight` requests carried: checked 2xx answers per second (S8's capacity). */
export async function closedLoop(target: HttpTarget, inFlight: number, seconds: number) {
  const elu = performance.eventLoopUtilization();
  const { result, errors } = await once({ ...target, connections: inFlight }, seconds);
  const answered = result['2xx'] - errors.mismatches;
  return {
    rps: answered / result.duration,
    answered,
    seconds: result.duration,
    errors,
    loadgenElu: performance.eventLoopUtilization(elu).utilization,
  };
}

/** One target measured step by step, so two targets can take turns (S1); measureHttp runs it straight through. */
export function httpSession(target: HttpTarget, watch: Watch = {}) {
  const statuses = new Map<number, number>();
  const errors: HttpErrors[] = [];
  /** `serverCores`: the measured child's CPU over a run; `callsPerQuery`: the upstream's contract calls ÷ requests. */
  const runs: Array<{ rps: number; p99: number; requests: number; callsPerQuery?: number; serverCores?: number; loadgenElu: number }> = [];
  async function run() {
    const before = watch.upstream ? await watch.upstream.stats() : undefined;
    const cpuBefore = watch.server?.cpuSeconds();
    const elu = performance.eventLoopUtilization();
    const started = performance.now();
    const { result, errors: runErrors } = await once(target, SETTINGS.runSeconds, statuses);
    const elapsed = (performance.now() - started) / 1_000;
    const loadgenElu = performance.eventLoopUtilization(elu).utilization;
    const serverCores = watch.server ? (watch.server.cpuSeconds() - (cpuBefore ?? 0)) / elapsed : undefined;
    errors.push(runErrors);
    let callsPerQuery: number | undefined;
    if (watch.upstream && before) {
      // Requests in flight when the run stopped still make their upstream calls: let them land, and
      // divide by requests sent (completed + those), not completed, or short runs overstate the cost.
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, Math.max(250, 2 * result.latency.p99))));
      const sent = (result.requests as { sent?: number }).sent ?? result.requests.total;
      callsPerQuery = contractCalls(before, await watch.upstream.stats()) / Math.max(1, sent);
    }
    const requests = result.requests.total;
    runs.push({ rps: requests / result.duration, p99: result.latency.p99, requests, callsPerQuery, serverCores, loadgenElu });
    return runs.at(-1)!;
  }
  return {
    async warmUp() {
      errors.push((await once(target, SETTINGS.warmupSeconds, statuses)).errors);
    },
    run,
    result() {
      const rpsValues = runs.map((r) => r.rps);
      const notes: string[] = [];
      const cores = median(runs.map((r) => r.serverCores ?? Number.NaN));
      // CPU per request moves less than req/s when other work on the machine takes turns with the server.
      const cpuPerRequestUs = median(runs.map((r) => ((r.serverCores ?? Number.NaN) / r.rps) * 1e6));
      if (Number.isFinite(cores)) notes.push(`server CPU ${cores.toFixed(2)} cores, ${cpuPerRequestUs.toFixed(0)} µs/request`);
      const elu = median(runs.map((r) => r.loadgenElu));
      notes.push(`loadgen ELU ${(elu * 100).toFixed(0)}%${elu > 0.95 ? ' (load generator saturated)' : ''}`);
      if (statuses.size > 0) notes.push(`statuses ${[...statuses].map(([s, n]) => `${s}×${n}`).join(' ')}`);
      return {
        runs: [...runs],
        rps: { median: median(rpsValues), min: Math.min(...rpsValues), max: Math.max(...rpsValues) },
        p99: median(runs.map((r) => r.p99)),
        callsPerQuery: watch.upstream ? median(runs.map((r) => r.callsPerQuery ?? Number.NaN)) : undefined,
        cpuPerRequestUs,
        errors: sumErrors(errors),
        notes,
      };
    },
  };
}

/** A warm-up, then SETTINGS.runs runs; `afterWarmUp` reads what the runs are to be measured against. */
export async function measureHttp(target: HttpTarget, watch: Watch = {}, afterWarmUp?: () => Promise<unknown>) {
  const session = httpSession(target, watch);
  await session.warmUp();
  await afterWarmUp?.();
  for (let run = 0; run < SETTINGS.runs; run += 1) await session.run();
  return session.result();
}

export const APOLLO_CLIENT_ACCEPT = 'application/graphql-response+json,application/json;q=0.9';

export function graphqlTarget(
  url: string,
  path: string,
  key: string,
  cases: Array<{ query: string; variables?: Record<string, unknown>; check: BodyCheck }>,
  accept?: string,
): HttpTarget {
  return {
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: key, ...(accept ? { accept } : {}) },
    cases: cases.map((c) => ({ path, body: JSON.stringify({ query: c.query, variables: c.variables }), check: c.check })),
  };
}
