import { answers200, spawnNode, type Child, type Placement } from './children.js';
import type { HttpTarget } from './http-load.js';
import { toWire } from './load-generator-server.js';
import type { ClosedLoopRun, GeneratedRun, LoadGenerator } from './open-loop.js';
import { contractCalls, type Upstream } from './servers.js';
import type { PacedWebhook, PacerRun } from './webhook-pacer.js';

/** The generator process, where `placement` says (pinning.ts). */
export function startLoadGenerator(placement: Placement = {}): Promise<Child> {
  return spawnNode({
    name: 'S8 load generator',
    entry: 'bench/lib/load-generator-main.ts',
    env: {},
    ready: answers200('/readyz'),
    ...placement,
  });
}

async function post<T>(generator: Child, path: string, body: unknown, seconds = 0): Promise<T> {
  const response = await fetch(`${generator.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(seconds * 1_000 + 60_000),
  });
  if (response.status !== 200) throw new Error(`load generator ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** S5's webhooks paced from the generator process (webhook-pacer.ts); one entry per webhook. */
export const runPacer = (generator: Child, run: PacerRun): Promise<PacedWebhook[]> =>
  post<PacedWebhook[]>(generator, '/pace', run, run.seconds + run.graceMs / 1_000);

/** `target` driven from the generator process, over a pool of its own there. */
export async function remoteGenerator(generator: Child, target: HttpTarget): Promise<LoadGenerator> {
  const { id } = await post<{ id: number }>(generator, '/targets', { target: toWire(target) });
  return {
    openLoop: (rate, seconds) => post<GeneratedRun>(generator, '/open', { id, rate, seconds }, seconds),
    closedLoop: (inFlight, seconds) => post<ClosedLoopRun>(generator, '/closed', { id, inFlight, seconds }, seconds),
    close: () => post<unknown>(generator, '/close', { id }).then(() => undefined),
  };
}

export interface Watch {
  upstream?: Upstream;
  server?: Child;
}

export interface OpenLoopRun extends GeneratedRun {
  /** Measured child's CPU per answer, in µs (NaN without a child). */
  serverCpuUs: number;
  /** Upstream contract calls ÷ requests, when an upstream was given. */
  callsPerRequest: number | undefined;
}

export interface CapacityRun extends ClosedLoopRun {
  /** Measured child's CPU over the run, in cores (near 1 when pinned to a core it had to itself: CPU bound). */
  serverCores: number;
  serverCpuUs: number;
}

/** One open-loop run at `rate`, with the server's CPU and the upstream's calls over it. */
export async function measuredOpenLoop(generator: LoadGenerator, rate: number, seconds: number, watch: Watch): Promise<OpenLoopRun> {
  const before = watch.upstream ? await watch.upstream.stats() : undefined;
  const cpuBefore = watch.server?.cpuSeconds() ?? Number.NaN;
  const run = await generator.openLoop(rate, seconds);
  const answered = Math.max(1, run.scheduled - run.errors.connection - run.errors.timeouts);
  const serverCpuUs = (((watch.server?.cpuSeconds() ?? Number.NaN) - cpuBefore) / answered) * 1e6;
  const callsPerRequest = before && watch.upstream ? contractCalls(before, await watch.upstream.stats()) / run.scheduled : undefined;
  return { ...run, serverCpuUs, callsPerRequest };
}

/** One closed-loop run, with the server's CPU over it. */
export async function measuredClosedLoop(generator: LoadGenerator, inFlight: number, seconds: number, server: Child): Promise<CapacityRun> {
  const cpuBefore = server.cpuSeconds();
  const run = await generator.closedLoop(inFlight, seconds);
  const used = server.cpuSeconds() - cpuBefore;
  return { ...run, serverCores: used / run.seconds, serverCpuUs: (used / Math.max(1, run.answered)) * 1e6 };
}
