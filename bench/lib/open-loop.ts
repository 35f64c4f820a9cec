import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { Child } from './children.js';
import type { HttpTarget } from './http-load.js';
import { contractCalls, type Upstream } from './servers.js';
import { quantile } from './stats.js';

/*
 * Open-loop HTTP load (S8): requests leave on a fixed schedule, one every
 * 1/rate s, whether or not earlier ones were answered, rotating over the
 * target's cases. A request's latency runs from its SCHEDULED send time to the
 * last byte of its answer, so a stall of the server (or of this generator)
 * counts against every request that should have gone out during it, not just
 * the one that was waiting (no coordinated omission). No send is dropped: one
 * that could not leave on time leaves as soon as it can, and is counted late.
 */

/** A send leaving more than this after its scheduled time is late: the generator, not the server, kept it. */
export const LATE_MS = 2;
/** After the last scheduled send, answers still missing this long are counted as timeouts. */
const DRAIN_MS = 2_000;

export interface OpenLoopErrors {
  non2xx: number;
  mismatches: number;
  connection: number;
  timeouts: number;
  total: number;
}

export interface OpenLoopRun {
  /** Requests the schedule held (rate × seconds); all of them are sent. */
  scheduled: number;
  /** Latency percentiles of the 2xx answers, from scheduled send to last byte, in ms. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** Sends that left more than LATE_MS after their scheduled time, and the largest delay of any send, in ms. */
  late: number;
  maxSendLagMs: number;
  errors: OpenLoopErrors;
  /** Measured child's CPU per answer, in µs (NaN without a child). */
  serverCpuUs: number;
  /** Upstream contract calls ÷ requests, when an upstream was given. */
  callsPerRequest: number | undefined;
  /** Event-loop utilisation of this (load generating) process over the run. */
  loadgenElu: number;
}

export interface OpenLoopSession {
  /** A run at the same rate whose figures are dropped; returns its errors (they void the figure too). */
  warmUp(seconds: number): Promise<OpenLoopErrors>;
  run(seconds: number): Promise<OpenLoopRun>;
  close(): Promise<void>;
}

const noErrors = (): OpenLoopErrors => ({ non2xx: 0, mismatches: 0, connection: 0, timeouts: 0, total: 0 });

/** One target at `rate` requests per second over a pool of its own, kept between runs (connections stay warm). */
export function openLoopSession(target: HttpTarget, rate: number, watch: { upstream?: Upstream; server?: Child } = {}): OpenLoopSession {
  // Enough connections that a stall of the server, not a lack of sockets, is what queues requests.
  const pool = new Pool(target.url, { connections: 256, pipelining: 1 });
  const intervalMs = 1_000 / rate;

  async function schedule(seconds: number) {
    const scheduled = Math.max(1, Math.round(rate * seconds));
    const latencies: number[] = [];
    const errors = noErrors();
    let late = 0;
    let maxSendLagMs = 0;
    let pending = 0;
    let settle: (() => void) | undefined;
    const settled = () => {
      pending -= 1;
      if (pending === 0 && settle) settle();
    };
    const send = (i: number, at: number, now: number) => {
      const lag = now - at;
      if (lag > LATE_MS) late += 1;
      if (lag > maxSendLagMs) maxSendLagMs = lag;
      const chosen = target.cases[i % target.cases.length]!;
      pending += 1;
      pool.request({ method: target.method, path: chosen.path, headers: target.headers, body: chosen.body }).then(
        async (answer) => {
          const body = await answer.body.text();
          const done = performance.now();
          if (answer.statusCode < 200 || answer.statusCode >= 300) errors.non2xx += 1;
          else if (!chosen.check.matches(body)) errors.mismatches += 1;
          else latencies.push(done - at);
          settled();
        },
        (error: { code?: string }) => {
          if (error.code === 'UND_ERR_HEADERS_TIMEOUT' || error.code === 'UND_ERR_BODY_TIMEOUT') errors.timeouts += 1;
          else errors.connection += 1;
          settled();
        },
      );
    };
    const start = performance.now() + 5;
    let next = 0;
    await new Promise<void>((resolve) => {
      const tick = () => {
        let now = performance.now();
        for (let at = start + next * intervalMs; next < scheduled && at <= now; at = start + next * intervalMs) {
          send(next, at, now);
          next += 1;
          now = performance.now();
        }
        if (next >= scheduled) return resolve();
        setTimeout(tick, start + next * intervalMs - now);
      };
      setTimeout(tick, start - performance.now());
    });
    // Answers still missing when the drain ends are timeouts; should they land later, they no longer count.
    if (pending > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, DRAIN_MS);
        settle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    errors.timeouts += pending;
    errors.total = errors.non2xx + errors.mismatches + errors.connection + errors.timeouts;
    // Copies: an answer landing after the drain must not change figures already taken.
    return { scheduled, latencies: [...latencies], errors: { ...errors }, late, maxSendLagMs };
  }

  return {
    async warmUp(seconds) {
      return (await schedule(seconds)).errors;
    },
    async run(seconds) {
      const before = watch.upstream ? await watch.upstream.stats() : undefined;
      const cpuBefore = watch.server?.cpuSeconds() ?? Number.NaN;
      const elu = performance.eventLoopUtilization();
      const { scheduled, latencies, errors, late, maxSendLagMs } = await schedule(seconds);
      const loadgenElu = performance.eventLoopUtilization(elu).utilization;
      const answered = Math.max(1, latencies.length + errors.non2xx + errors.mismatches);
      const serverCpuUs = (((watch.server?.cpuSeconds() ?? Number.NaN) - cpuBefore) / answered) * 1e6;
      const callsPerRequest = before && watch.upstream ? contractCalls(before, await watch.upstream.stats()) / scheduled : undefined;
      return {
        scheduled,
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        p999: quantile(latencies, 0.999),
        max: quantile(latencies, 1),
        late,
        maxSendLagMs,
        errors,
        serverCpuUs,
        callsPerRequest,
        loadgenElu,
      };
    },
    close: () => pool.close(),
  };
}
