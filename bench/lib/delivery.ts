import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { sleep } from './children.js';
import type { Fleet } from './subscribers.js';
import { quantile } from './stats.js';

/*
 * One event fanned out to a fleet: when each subscriber got it, measured from
 * the moment its POST was issued, with duplicates and wrong bodies counted.
 */

export interface RoundResult {
  p50: number;
  p99: number;
  last: number;
  missing: number;
  duplicates: number;
  wrong: number;
  answerMs: number;
  answerStatus: number;
}

export class DeliveryTracker {
  private received: Float64Array;
  private expectedId = '';
  private expectedStatus = '';
  private got = 0;
  private duplicates = 0;
  private wrong = 0;
  private done: (() => void) | undefined;
  /** Subscribers that got any probe since `probeReset`. */
  private probed: Uint8Array;
  private probedCount = 0;

  constructor(private readonly size: number) {
    this.received = new Float64Array(size);
    this.probed = new Uint8Array(size);
  }

  /** The fleet's sink. Events other than the current one (late probes) are ignored; results not shaped as expected are wrong. */
  note(i: number, eventId: string | undefined, status: string | undefined): void {
    if (eventId === undefined) {
      this.wrong += 1;
      return;
    }
    if (eventId.startsWith('probe-')) {
      if (!this.probed[i]) {
        this.probed[i] = 1;
        if (++this.probedCount === this.size) this.done?.();
      }
      return;
    }
    if (eventId !== this.expectedId) return;
    if (this.received[i]! > 0) {
      this.duplicates += 1;
      return;
    }
    this.received[i] = performance.now();
    if (status !== this.expectedStatus) this.wrong += 1;
    if (++this.got === this.size) this.done?.();
  }

  /**
   * Posts probe events until every subscriber got one: graphql-ws has no
   * "subscribed" acknowledgement, and an event published before a
   * subscription is set up never reaches it. Returns how many never did.
   */
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

  async round(eventId: string, status: string, post: () => Promise<{ status: number; ms: number; at: number }>, timeoutMs = 20_000): Promise<RoundResult> {
    this.received.fill(0);
    this.expectedId = eventId;
    this.expectedStatus = status;
    this.got = 0;
    this.duplicates = 0;
    this.wrong = 0;
    const all = new Promise<void>((resolve) => (this.done = resolve));
    const answer = await post();
    await Promise.race([all, sleep(timeoutMs)]);
    // Let late duplicates show up before the round is judged.
    await sleep(100);
    this.done = undefined;
    const latencies: number[] = [];
    for (const t of this.received) if (t > 0) latencies.push(t - answer.at);
    return {
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      last: latencies.length ? Math.max(...latencies) : Number.NaN,
      missing: this.size - latencies.length,
      duplicates: this.duplicates,
      wrong: this.wrong + (answer.status === 200 ? 0 : 1),
      answerMs: answer.ms,
      answerStatus: answer.status,
    };
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

/**
 * File descriptors one process needs for `n` subscribers: one socket each on
 * each side (this process holds the clients, the server child the other
 * ends: n + n across both, i.e. 10 000 for 5 000), plus room for everything else.
 */
export const fdsNeeded = (n: number) => n + 1_024;

export async function grown(fleet: Fleet, target: number): Promise<number> {
  const started = performance.now();
  await fleet.grow(target);
  return (performance.now() - started) / 1_000;
}
