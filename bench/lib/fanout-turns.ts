import { performance } from 'node:perf_hooks';
import type { Child } from './children.js';
import { fleetProcesses } from './delivery.js';
import { startWorkerFleet, type FleetRound, type WorkerFleet } from './fleet-workers.js';
import { rawMessage } from './webhook-pacer.js';
import { statusFor, webhookSender, type Posted } from './webhooks.js';

/** Rounds before the measured ones, not counted: the first fan-outs of a process run unoptimised code. */
const WARMUP_ROUNDS = 2;
const PAUSE_MS = 300;

export interface FanoutSide {
  label: string;
  server: Child;
  /** `raw`: plain ws clients and POST /broadcast with the frame itself; `graphql-ws`: subscribers and webhooks. */
  kind: 'raw' | 'graphql-ws';
}

export interface SideFigures {
  size: number;
  shortfall?: string;
  rounds: FleetRound[];
  /** Server and fleet CPU seconds over each measured round, by round. */
  serverCpu: number[];
  loadgenCpu: number[];
  openSeconds: number;
  unprobed: number;
  warmupErrors: number;
  failures: number;
  processes: number;
}

interface Open {
  side: FanoutSide;
  fleet: WorkerFleet;
  post(id: string, n: number): Promise<Posted>;
  close(): Promise<void>;
}

async function openSide(side: FanoutSide, processes: number): Promise<Open> {
  const fleet = await startWorkerFleet(side.server.url, side.kind, processes);
  const sender = webhookSender(side.server.url, 2);
  return {
    side,
    fleet,
    post: (id, n) =>
      side.kind === 'raw'
        ? sender.postRaw('/broadcast', rawMessage(id, statusFor(n), '00000000-0000-4000-8000-000000000000'))
        : sender.post(id, n),
    async close() {
      await fleet.close();
      await sender.close();
    },
  };
}

export async function fanoutInTurns(
  sides: FanoutSide[],
  sizes: Array<{ size: number; shortfall?: string }>,
  rounds: number,
  log: (m: string) => void,
): Promise<SideFigures[][]> {
  const processes = fleetProcesses(Math.max(...sizes.map((s) => s.size)));
  const open: Open[] = [];
  const figures: SideFigures[][] = sides.map(() => []);
  try {
    for (const side of sides) open.push(await openSide(side, processes));
    for (const { size, shortfall } of sizes) {
      const per = new Map<Open, SideFigures>();
      for (const o of open) {
        log(`${o.side.label}: opening ${size} subscribers in ${processes} fleet processes`);
        const started = performance.now();
        await o.fleet.grow(size);
        const openSeconds = (performance.now() - started) / 1_000;
        const unprobed = await o.fleet.probeAll((id) => o.post(id, 0));
        per.set(o, {
          size,
          ...(shortfall ? { shortfall } : {}),
          rounds: [],
          serverCpu: [],
          loadgenCpu: [],
          openSeconds,
          unprobed,
          warmupErrors: 0,
          failures: 0,
          processes,
        });
      }
      for (const o of open) {
        for (let r = 0; r < WARMUP_ROUNDS; r += 1) {
          const id = `s4-warmup-${size}-${r}-${Date.now()}`;
          const round = await o.fleet.round(id, statusFor(r + 1), () => o.post(id, r + 1));
          per.get(o)!.warmupErrors += round.missing + round.duplicates + round.wrong;
        }
      }
      for (let r = 0; r < rounds; r += 1) {
        for (const o of r % 2 === 0 ? open : [...open].reverse()) {
          const f = per.get(o)!;
          const id = `s4-${size}-${r}-${Date.now()}`;
          const [cpu, loadgenCpu] = [o.side.server.cpuSeconds(), o.fleet.cpuSeconds()];
          f.rounds.push(await o.fleet.round(id, statusFor(r + 1), () => o.post(id, r + 1)));
          f.serverCpu.push(o.side.server.cpuSeconds() - cpu);
          f.loadgenCpu.push(o.fleet.cpuSeconds() - loadgenCpu);
          await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
        }
      }
      open.forEach((o, k) => {
        const f = per.get(o)!;
        f.failures = o.fleet.failures;
        figures[k]!.push(f);
        const pct = (x: number) => `${Math.round(x * 100)}%`;
        log(
          `${o.side.label} ${size}: p99 ${f.rounds.map((x) => Math.round(x.p99)).join('/')} ms, ` +
            `loadgen ELU ${f.rounds.map((x) => pct(x.loadgenElu)).join('/')}`,
        );
      });
    }
  } finally {
    await Promise.all(open.map((o) => o.close()));
  }
  return figures;
}
