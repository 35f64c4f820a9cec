import { performance } from 'node:perf_hooks';
import { sleep, spawnIpcChild, type IpcChild } from './children.js';
import { percentiles } from './stats.js';
import { monotonicMs, type WorkerReply, type WorkerRequest } from './fleet-protocol.js';
import type { RoundResult } from './delivery.js';
import type { Posted } from './webhooks.js';

/** `loadgenElu`: the highest event-loop utilisation of a fleet process over its deliveries of the round (0–1). */
export type FleetRound = RoundResult & { loadgenElu: number };
export type WorkerFleet = Awaited<ReturnType<typeof startWorkerFleet>>;

type Reply = Extract<WorkerReply, { seq: number }>;
type Request = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'seq'> : never) : never;

interface FleetProcess {
  child: IpcChild;
  size: number;
  failures: number;
  ask(request: Request): Promise<Reply>;
}

async function startProcess(
  httpUrl: string,
  kind: 'graphql-ws' | 'raw',
  onEvent: (event: 'probed' | 'done') => void,
): Promise<FleetProcess> {
  const child = spawnIpcChild('bench/lib/fleet-worker-main.ts', [httpUrl, kind]);
  const pending = new Map<number, (reply: Reply) => void>();
  let seq = 0;
  let ready: () => void = () => {};
  const started = new Promise<void>((resolve) => (ready = resolve));
  const self: FleetProcess = {
    child,
    size: 0,
    failures: 0,
    ask(request) {
      const n = (seq += 1);
      return new Promise<Reply>((resolve, reject) => {
        pending.set(n, (reply) => (reply.error ? reject(new Error(`fleet process: ${reply.error}`)) : resolve(reply)));
        child.process.send({ ...request, seq: n });
      });
    },
  };
  child.process.on('message', (reply: WorkerReply) => {
    if ('event' in reply) return reply.event === 'ready' ? ready() : onEvent(reply.event);
    self.size = reply.size;
    self.failures = reply.failures;
    pending.get(reply.seq)?.(reply);
    pending.delete(reply.seq);
  });
  child.process.once('exit', (code) => {
    for (const settle of pending.values()) settle({ seq: 0, size: 0, failures: 0, error: `exited (${code}): ${child.output().trim()}` });
  });
  await Promise.race([
    started,
    sleep(30_000).then(() => Promise.reject(new Error(`fleet process not ready in 30 s: ${child.output().trim()}`))),
  ]);
  return self;
}

/** `processes` fleet processes of `kind` subscribers of the server at `httpUrl` (graphql-ws at /graphql, raw at /). */
export async function startWorkerFleet(httpUrl: string, kind: 'graphql-ws' | 'raw', processes: number) {
  let signalled = 0;
  let wake: () => void = () => {};
  const onEvent = () => {
    signalled += 1;
    wake();
  };
  const workers = await Promise.all(Array.from({ length: processes }, () => startProcess(httpUrl, kind, onEvent)));
  const all = (request: Request) => Promise.all(workers.map((w) => w.ask(request)));
  /** Waits until `count` processes have signalled since the last reset, or `ms` pass. */
  const signalledBy = async (count: number, ms: number) => {
    const deadline = performance.now() + ms;
    while (signalled < count && performance.now() < deadline) {
      await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(Math.max(0, deadline - performance.now()))]);
    }
  };
  const size = () => workers.reduce((sum, w) => sum + w.size, 0);
  const busy = () => workers.filter((w) => w.size > 0).length;
  return {
    get size() {
      return size();
    },
    get failures() {
      return workers.reduce((sum, w) => sum + w.failures, 0);
    },
    processes,
    async grow(target: number) {
      // Subscriber i lives in process i mod N.
      await Promise.all(
        workers.map((w, k) => w.ask({ op: 'grow', target: Math.floor(target / processes) + (k < target % processes ? 1 : 0) })),
      );
    },
    async probeAll(post: (id: string) => Promise<unknown>, timeoutMs = 60_000) {
      await all({ op: 'probe-reset' });
      signalled = 0;
      const deadline = performance.now() + timeoutMs;
      for (let k = 0; signalled < busy() && performance.now() < deadline; k += 1) {
        await post(`probe-${Date.now()}-${k}`);
        await signalledBy(busy(), 2_000);
      }
      const counts = await all({ op: 'probe-count' });
      return size() - counts.reduce((sum, r) => sum + (r.probed ?? 0), 0);
    },
    /** One event to everyone: `post` sends it; latencies run from the moment the POST was issued. */
    async round(eventId: string, status: string, post: () => Promise<Posted>, timeoutMs = 20_000): Promise<FleetRound> {
      await all({ op: 'arm', eventId, status });
      signalled = 0;
      // performance.now() of this process, on the machine's monotonic clock.
      const offset = monotonicMs() - performance.now();
      const answer = await post();
      await signalledBy(busy(), timeoutMs);
      // Let late duplicates show up before the round is judged.
      await sleep(100);
      const replies = await all({ op: 'collect' });
      const issued = answer.at + offset;
      const latencies = replies.flatMap((r) => (r.times ?? []).map((t) => t - issued));
      const [p50, p99] = percentiles(latencies, [50, 99]);
      return {
        p50: p50!,
        p99: p99!,
        last: latencies.length ? latencies.reduce((max, v) => Math.max(max, v), 0) : Number.NaN,
        missing: size() - latencies.length,
        duplicates: replies.reduce((sum, r) => sum + (r.duplicates ?? 0), 0),
        wrong: replies.reduce((sum, r) => sum + (r.wrong ?? 0), 0) + (answer.status === 200 ? 0 : 1),
        answerMs: answer.ms,
        answerStatus: answer.status,
        loadgenElu: replies.reduce((max, r) => (r.elu !== undefined && r.elu > max ? r.elu : max), 0),
      };
    },
    cpuSeconds: () => workers.reduce((sum, w) => sum + w.child.cpuSeconds(), 0),
    async close() {
      await Promise.allSettled(workers.map((w) => w.ask({ op: 'close' })));
      await Promise.all(workers.map((w) => w.child.stop()));
    },
  };
}
