import { performance } from 'node:perf_hooks';
import { onSchedule } from './open-loop.js';
import { webhookSender } from './webhooks.js';

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

export type PacedWebhook = Awaited<ReturnType<typeof pace>>[number];

export const nowAbsolute = (): number => performance.timeOrigin + performance.now();

export async function pace(run: PacerRun) {
  const total = run.rate * run.seconds;
  const sender = webhookSender(run.target, run.connections, run.mode === 'raw');
  const results = Array.from({ length: total }, () => ({ status: 0, ms: Number.NaN, sentAt: Number.NaN }));
  let answered = 0;
  try {
    await onSchedule(run.rate, total, (n) => {
      const entry = results[n]!;
      entry.sentAt = nowAbsolute();
      sender.post(`${run.prefix}${n}`, n).then(
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
