import { performance } from 'node:perf_hooks';
import type { Child } from './children.js';
import { fleetProcesses } from './delivery.js';
import { startWorkerFleet, type FleetRound } from './fleet-workers.js';
import { withChildren } from './scenario.js';
import { statusFor, webhookSender } from './webhooks.js';

/** Rounds before the measured ones, not counted: the first fan-outs of a process run unoptimised code. */
const WARMUP_ROUNDS = 2;

/** `raw`: plain ws clients and POST /broadcast with the frame itself; `graphql-ws`: subscribers and webhooks. */
export interface FanoutSide {
  label: string;
  server: Child;
  kind: 'raw' | 'graphql-ws';
}

const newFigures = (size: number, shortfall: string | undefined, processes: number, openSeconds: number, unprobed: number) => ({
  size,
  shortfall,
  rounds: [] as FleetRound[],
  /** Server and fleet CPU seconds over each measured round. */
  serverCpu: [] as number[],
  loadgenCpu: [] as number[],
  openSeconds,
  unprobed,
  warmupErrors: 0,
  failures: 0,
  processes,
});
export type SideFigures = ReturnType<typeof newFigures>;

async function openSide(side: FanoutSide, processes: number) {
  const fleet = await startWorkerFleet(side.server.url, side.kind, processes);
  const sender = webhookSender(side.server.url, 2, side.kind === 'raw');
  return {
    side,
    fleet,
    post: (id: string, n: number) => sender.post(id, n, '00000000-0000-4000-8000-000000000000'),
    stop: () => Promise.all([fleet.stop(), sender.close()]),
  };
}

export async function fanoutInTurns(
  sides: FanoutSide[],
  sizes: Array<{ size: number; shortfall?: string }>,
  rounds: number,
  log: (m: string) => void,
) {
  const processes = fleetProcesses(Math.max(...sizes.map((s) => s.size)));
  return withChildren(
    sides.map((side) => () => openSide(side, processes)),
    async (open) => {
      const figures = open.map(() => [] as SideFigures[]);
      for (const { size, shortfall } of sizes) {
        const per: SideFigures[] = [];
        for (const o of open) {
          log(`${o.side.label}: opening ${size} subscribers in ${processes} fleet processes`);
          const started = performance.now();
          await o.fleet.grow(size);
          const openSeconds = (performance.now() - started) / 1_000;
          per.push(newFigures(size, shortfall, processes, openSeconds, await o.fleet.probeAll()));
        }
        for (const [k, o] of open.entries()) {
          for (let r = 0; r < WARMUP_ROUNDS; r += 1) {
            const id = `s4-warmup-${size}-${r}-${Date.now()}`;
            const round = await o.fleet.round(id, statusFor(r + 1), () => o.post(id, r + 1));
            per[k]!.warmupErrors += round.missing + round.duplicates + round.wrong;
          }
        }
        for (let r = 0; r < rounds; r += 1) {
          for (const [k, o] of r % 2 === 0 ? open.entries() : [...open.entries()].reverse()) {
            const id = `s4-${size}-${r}-${Date.now()}`;
            const [cpu, loadgenCpu] = [o.side.server.cpuSeconds(), o.fleet.cpuSeconds()];
            per[k]!.rounds.push(await o.fleet.round(id, statusFor(r + 1), () => o.post(id, r + 1)));
            per[k]!.serverCpu.push(o.side.server.cpuSeconds() - cpu);
            per[k]!.loadgenCpu.push(o.fleet.cpuSeconds() - loadgenCpu);
            await new Promise((resolve) => setTimeout(resolve, 300));
          }
        }
        open.forEach((o, k) => {
          const f = per[k]!;
          f.failures = o.fleet.failures;
          figures[k]!.push(f);
          const pct = (x: number) => `${Math.round(x * 100)}%`;
          log(
            `${o.side.label} ${size}: p99 ${f.rounds.map((x) => Math.round(x.p99)).join('/')} ms, ` +
              `loadgen ELU ${f.rounds.map((x) => pct(x.loadgenElu)).join('/')}`,
          );
        });
      }
      return figures;
    },
  );
}
