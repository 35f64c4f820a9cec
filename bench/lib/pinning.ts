import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Placement } from './children.js';

/** Nice values (lower runs first): the servers under test and the upstream, and the generator above them. */
export const SERVER_NICE = -10;
export const GENERATOR_NICE = -15;

export type S8Placement = ReturnType<typeof planPlacement>;

/** The CPUs this process may run on (Linux `Cpus_allowed_list`, e.g. "0-1,4"), in order; undefined where unknown. */
export function allowedCpus(): number[] | undefined {
  try {
    const line = /^Cpus_allowed_list:\s*(.+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]?.trim();
    if (!line) return undefined;
    const cpus: number[] = [];
    for (const part of line.split(',')) {
      const [from, to] = part.split('-').map(Number) as [number, number | undefined];
      for (let cpu = from; cpu <= (to ?? from); cpu += 1) cpus.push(cpu);
    }
    return cpus;
  } catch {
    return undefined;
  }
}

/** Where S8's processes run: the gateway and the bare hop alike (`server`), the upstream and the generator on the other core. */
export function planPlacement(wanted: boolean): {
  pinned: boolean;
  text: string;
  server: Placement;
  upstream: Placement;
  generator: Placement;
} {
  const cpus = allowedCpus();
  const why = !wanted
    ? 'BENCH_S8_PIN=off'
    : !cpus
      ? 'the usable cores are unknown here (no /proc/self/status)'
      : cpus.length < 2
        ? `this process may use ${cpus.length} core, pinning needs 2`
        : spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status !== 0
          ? 'taskset (util-linux) is not installed'
          : undefined;
  const server = { nice: SERVER_NICE };
  if (why || !cpus) {
    const text = `UNPINNED (${why}): every process on any core`;
    return { pinned: false, text, server, upstream: server, generator: { nice: GENERATOR_NICE } };
  }
  // The first two CPUs this process may use.
  const [core, load] = [String(cpus[0]), String(cpus[1])];
  return {
    pinned: true,
    text: `pinned with taskset: the server under test on core ${core}, the load generator and the upstream on core ${load}`,
    server: { cpus: core, ...server },
    upstream: { cpus: load, ...server },
    generator: { cpus: load, nice: GENERATOR_NICE },
  };
}
