import { performance } from 'node:perf_hooks';
import { sleep, spawnIpcChild } from './children.js';
import { monotonicMs } from './delivery.js';
import type { Reply, Request } from './fleet-worker-main.js';
import { percentiles } from './stats.js';
import type { Posted } from './webhooks.js';

export type WorkerFleet = Awaited<ReturnType<typeof startWorkerFleet>>;
export type FleetRound = Awaited<ReturnType<WorkerFleet['round']>>;

async function startProcess(httpUrl: string, kind: 'graphql-ws' | 'raw') {
  const child = spawnIpcChild('bench/lib/fleet-worker-main.ts', [httpUrl, kind]);
  const next = () =>
    new Promise<Reply>((resolve, reject) => {
      const exited = (code: number | null) => reject(new Error(`fleet process exited (${code}): ${child.output().trim()}`));
      child.process.once('exit', exited);
      child.process.once('message', (reply: Reply) => {
        child.process.off('exit', exited);
        if (reply.error) reject(new Error(`fleet process: ${reply.error}`));
        else resolve((worker.last = reply));
      });
    });
  const worker = {
    child,
    last: { size: 0, failures: 0 } as Reply,
    ask(request: Request) {
      child.process.send(request);
      return next();
    },
  };
  const timeout = sleep(30_000).then(() => Promise.reject(new Error(`fleet process not ready in 30 s: ${child.output().trim()}`)));
  await Promise.race([next(), timeout]);
  return worker;
}

/** `processes` fleet processes of `kind` subscribers of the server at `httpUrl` (graphql-ws at /graphql, raw at /). */
export async function startWorkerFleet(httpUrl: string, kind: 'graphql-ws' | 'raw', processes: number) {
  const workers = await Promise.all(Array.from({ length: processes }, () => startProcess(httpUrl, kind)));
  const all = (request: Request) => Promise.all(workers.map((w) => w.ask(request)));
  const sum = (replies: Reply[], pick: (r: Reply) => number | undefined) => replies.reduce((n, r) => n + (pick(r) ?? 0), 0);
  return {
    get failures() {
      return workers.reduce((n, w) => n + w.last.failures, 0);
    },
    async grow(target: number) {
      // Subscriber i lives in process i mod N.
      await Promise.all(
        workers.map((w, k) => w.ask({ op: 'grow', target: Math.floor(target / processes) + (k < target % processes ? 1 : 0) })),
      );
    },
    /** Subscribers never reached by a probe: each process posts probes until all of its own got one. */
    probeAll: async () => sum(await all({ op: 'probe' }), (r) => r.unprobed),
    /** One event to everyone: `post` sends it; latencies run from the moment the POST was issued. */
    async round(eventId: string, status: string, post: () => Promise<Posted>, timeoutMs = 20_000) {
      await all({ op: 'arm', eventId, status });
      // performance.now() of this process, on the machine's monotonic clock.
      const offset = monotonicMs() - performance.now();
      const answer = await post();
      const replies = await all({ op: 'collect', timeoutMs });
      const latencies = replies.flatMap((r) => (r.times ?? []).map((t) => t - answer.at - offset));
      const [p50, p99] = percentiles(latencies, [50, 99]);
      return {
        p50: p50!,
        p99: p99!,
        last: latencies.length ? latencies.reduce((max, v) => Math.max(max, v), 0) : Number.NaN,
        missing: sum(replies, (r) => r.size) - latencies.length,
        duplicates: sum(replies, (r) => r.duplicates),
        wrong: sum(replies, (r) => r.wrong) + (answer.status === 200 ? 0 : 1),
        answerMs: answer.ms,
        /** The highest event-loop utilisation of a fleet process over its deliveries of the round (0–1). */
        loadgenElu: replies.reduce((max, r) => (r.elu !== undefined && r.elu > max ? r.elu : max), 0),
      };
    },
    cpuSeconds: () => workers.reduce((sum, w) => sum + w.child.cpuSeconds(), 0),
    async stop() {
      await Promise.allSettled(workers.map((w) => w.ask({ op: 'close' })));
      await Promise.all(workers.map((w) => w.child.stop()));
    },
  };
}
