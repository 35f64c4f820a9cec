import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { closedLoop, errorsOf, type HttpErrors, type HttpTarget } from './http-load.js';
import { percentiles } from './stats.js';

/** A send leaving more than this after its scheduled time is late: the generator, not the server, kept it. */
export const LATE_MS = 2;
/** After the last scheduled send, answers still missing this long are counted as timeouts. */
const DRAIN_MS = 2_000;

export type LoadGenerator = ReturnType<typeof loadGenerator>;

export function onSchedule(rate: number, total: number, fire: (n: number, at: number) => void): Promise<void> {
  const intervalMs = 1_000 / rate;
  const start = performance.now() + 5;
  let next = 0;
  return new Promise<void>((resolve) => {
    const tick = () => {
      for (let at = start + next * intervalMs; next < total && at <= performance.now(); at = start + next * intervalMs) fire(next++, at);
      if (next >= total) return resolve();
      setTimeout(tick, start + next * intervalMs - performance.now());
    };
    setTimeout(tick, start - performance.now());
  });
}

/** One target over a pool of its own, kept between runs (connections stay warm). */
export function loadGenerator(target: HttpTarget) {
  // Enough connections that a stall of the server, not a lack of sockets, is what queues requests.
  // Timeouts well past any answer S8 expects, so a server that stops answering ends a closed loop too.
  const pool = new Pool(target.url, { connections: 256, pipelining: 1, headersTimeout: 10_000, bodyTimeout: 10_000 });

  /** Sends case `i`; `done` gets the answer's time, or undefined for an error (already counted in `errors`). */
  function send(i: number, errors: HttpErrors, done: (at: number | undefined) => void): void {
    const chosen = target.cases[i % target.cases.length]!;
    pool.request({ method: target.method, path: chosen.path, headers: target.headers, body: chosen.body }).then(
      async (answer) => {
        const body = await answer.body.text();
        const at = performance.now();
        if (answer.statusCode < 200 || answer.statusCode >= 300) errors.non2xx += 1;
        else if (!chosen.check.matches(body)) errors.mismatches += 1;
        else return done(at);
        done(undefined);
      },
      (error: { code?: string }) => {
        if (error.code === 'UND_ERR_HEADERS_TIMEOUT' || error.code === 'UND_ERR_BODY_TIMEOUT') errors.timeouts += 1;
        else errors.connection += 1;
        done(undefined);
      },
    );
  }

  /**
   * `scheduled` requests (rate × seconds), all sent; p50…max of the 2xx answers from scheduled send to last byte, ms;
   * `late`: sends that left more than LATE_MS after their time; `maxSendLagMs`: the largest delay of any send.
   */
  async function openLoop(rate: number, seconds: number) {
    const scheduled = Math.max(1, Math.round(rate * seconds));
    const latencies: number[] = [];
    const errors = errorsOf(0, 0, 0, 0);
    let late = 0;
    let maxSendLagMs = 0;
    let pending = 0;
    let settle: (() => void) | undefined;
    const elu = performance.eventLoopUtilization();
    await onSchedule(rate, scheduled, (n, at) => {
      const lag = performance.now() - at;
      if (lag > LATE_MS) late += 1;
      if (lag > maxSendLagMs) maxSendLagMs = lag;
      pending += 1;
      send(n, errors, (answeredAt) => {
        if (answeredAt !== undefined) latencies.push(answeredAt - at);
        pending -= 1;
        if (pending === 0 && settle) settle();
      });
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
    const loadgenElu = performance.eventLoopUtilization(elu).utilization;
    // Taken now: an answer landing after the drain must not change them.
    const [p50, p99, p999, max] = percentiles(latencies, [50, 99, 99.9, 100]) as [number, number, number, number];
    return {
      scheduled,
      p50,
      p99,
      p999,
      max,
      late,
      maxSendLagMs,
      errors: errorsOf(errors.non2xx, errors.mismatches, errors.connection, errors.timeouts + pending),
      loadgenElu,
    };
  }

  return {
    openLoop,
    closedLoop: (inFlight: number, seconds: number) => closedLoop(target, inFlight, seconds),
    close: () => pool.close(),
  };
}
