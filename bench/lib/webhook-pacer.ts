import { performance } from 'node:perf_hooks';
import { onSchedule } from './open-loop.js';
import { statusFor, webhookSender, type Posted } from './webhooks.js';

/*
 * S5's webhook sender, in the load generator process (load-generator-server.ts
 * POST /pace; load-generator.ts runPacer drives it). Posting from the
 * process that also receives 100 000+ subscription messages a second timed
 * that process's own event-loop lag, not the server's answer: a POST's answer
 * waited for the saturated receiver before its clock stopped. Here nothing
 * else runs, so `ms` is the server's answer time as a webhook sender sees it.
 *
 * A run {target, mode, rate, seconds, prefix, connections} paces the
 * webhooks by the clock (a slow server gets the same offered load) and
 * answers, once every POST is answered or `graceMs` after the last was sent,
 * with one entry per webhook: status (0 for no answer), ms, and the absolute
 * time it was sent (timeOrigin + now, comparable across processes).
 */

export interface PacerRun {
  target: string;
  /** `gateway`: enveloped webhooks to /webhooks; `raw`: the graphql-ws message itself to /broadcast. */
  mode: 'gateway' | 'raw';
  rate: number;
  seconds: number;
  prefix: string;
  connections: number;
  graceMs: number;
}

export interface PacedWebhook {
  status: number;
  ms: number;
  sentAt: number;
}

export const nowAbsolute = (): number => performance.timeOrigin + performance.now();

/** The frame the raw broadcaster sends, shaped as the gateway's `next` so one sink reads both. */
export const rawMessage = (eventId: string, status: string): string =>
  JSON.stringify({ id: '1', type: 'next', payload: { data: { transactionUpdated: { eventId, status } } } });

export async function pace(run: PacerRun): Promise<PacedWebhook[]> {
  const total = run.rate * run.seconds;
  const sender = webhookSender(run.target, run.connections);
  const results: PacedWebhook[] = Array.from({ length: total }, () => ({ status: 0, ms: Number.NaN, sentAt: Number.NaN }));
  let answered = 0;
  const post = (n: number): Promise<Posted> =>
    run.mode === 'raw' ? sender.postRaw('/broadcast', rawMessage(`${run.prefix}${n}`, statusFor(n))) : sender.post(`${run.prefix}${n}`, n);
  try {
    await onSchedule(run.rate, total, (n) => {
      const entry = results[n]!;
      entry.sentAt = nowAbsolute();
      post(n).then(
        (p) => {
          entry.status = p.status;
          entry.ms = p.ms;
          answered += 1;
        },
        () => void (answered += 1),
      );
    });
    const deadline = performance.now() + run.graceMs;
    while (answered < total && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    return results;
  } finally {
    await sender.close();
  }
}
