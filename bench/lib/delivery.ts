import { execFileSync } from 'node:child_process';
import { sleep } from './children.js';
import { fmt } from './stats.js';

export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Which subscribers of a fleet got a probe event. */
export class ProbeTracker {
  private done: (() => void) | undefined;
  private probed: Uint8Array;
  private probedCount = 0;

  constructor(private readonly size: number) {
    this.probed = new Uint8Array(size);
  }

  note(i: number, eventId: string): void {
    if (!eventId.startsWith('probe-') || this.probed[i]) return;
    this.probed[i] = 1;
    if (++this.probedCount === this.size) this.done?.();
  }

  async probeAll(post: (id: string) => Promise<unknown>, timeoutMs = 60_000): Promise<number> {
    this.probed.fill(0);
    this.probedCount = 0;
    const deadline = Date.now() + timeoutMs;
    for (let k = 0; this.probedCount < this.size && Date.now() < deadline; k += 1) {
      const all = new Promise<void>((resolve) => (this.done = resolve));
      await post(`probe-${Date.now()}-${k}`);
      await Promise.race([all, sleep(2_000)]);
    }
    this.done = undefined;
    return this.size - this.probedCount;
  }
}

/** The open-files limit children inherit (Node raises its soft limit to the hard one; `sh` shows what children get). */
export function openFilesLimit(): number {
  try {
    const text = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim();
    return text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text);
  } catch {
    return Number.NaN;
  }
}

export const fdsNeeded = (n: number) => n + 1_024;

export const SERVER_FDS = 64;

export function subscribersAllowed(asked: number, limit = openFilesLimit()): { size: number; shortfall?: string } {
  if (!(limit < asked + SERVER_FDS)) return { size: asked };
  const size = Math.max(0, limit - SERVER_FDS);
  return {
    size,
    shortfall:
      `${fmt(size)} of ${fmt(asked)} subscribers: one server process holds a socket per subscriber ` +
      `plus up to ${SERVER_FDS} other descriptors, so ${fmt(asked)} need ulimit -n ≥ ${asked + SERVER_FDS}; ` +
      `it is ${limit} here (raise the hard limit: ulimit -Hn, as root with CAP_SYS_RESOURCE)`,
  };
}

/** Fleet processes for `size` subscribers: BENCH_FLEET_PROCESSES (2), more when one process could not open its share. */
export function fleetProcesses(size: number, limit = openFilesLimit()): number {
  const wanted = Number(process.env.BENCH_FLEET_PROCESSES ?? 2);
  const perProcess = Number.isFinite(limit) ? limit - SERVER_FDS : Number.POSITIVE_INFINITY;
  return Math.max(wanted, Math.ceil(size / perProcess));
}
