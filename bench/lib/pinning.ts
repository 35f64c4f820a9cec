import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Placement } from './children.js';

/** Nice values (lower runs first): the servers under test and the upstream, and the generator above them. */
export const SERVER_NICE = -10;
export const GENERATOR_NICE = -15;

export interface S8Placement {
  pinned: boolean;
  text: string;
  /** The gateway and the bare hop, measured alike. */
  server: Placement;
  upstream: Placement;
  generator: Placement;
}

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

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why S8 cannot pin here, or the two cores: the first two CPUs this process may use. */
function cores(wanted: boolean): { why: string } | { server: number; load: number } {
  if (!wanted) return { why: 'BENCH_S8_PIN=off' };
  const cpus = allowedCpus();
  if (!cpus) return { why: 'the usable cores are unknown here (no /proc/self/status)' };
  if (cpus.length < 2) return { why: `this process may use ${cpus.length} core, pinning needs 2` };
  if (!hasTaskset()) return { why: 'taskset (util-linux) is not installed' };
  return { server: cpus[0]!, load: cpus[1]! };
}

export function planPlacement(wanted: boolean): S8Placement {
  const found = cores(wanted);
  const serverNice = { nice: SERVER_NICE };
  if ('why' in found) {
    return {
      pinned: false,
      text: `UNPINNED (${found.why}): every process on any core`,
      server: serverNice,
      upstream: serverNice,
      generator: { nice: GENERATOR_NICE },
    };
  }
  return {
    pinned: true,
    text: `pinned with taskset: the server under test on core ${found.server}, the load generator and the upstream on core ${found.load}`,
    server: { cpus: String(found.server), ...serverNice },
    upstream: { cpus: String(found.load), ...serverNice },
    generator: { cpus: String(found.load), nice: GENERATOR_NICE },
  };
}
