import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { sleep } from './children.js';
import { monotonicMs, ProbeTracker } from './delivery.js';
import { liteFleet, rawFleet } from './subscribers.js';
import { webhookSender } from './webhooks.js';

export type Request =
  | { op: 'grow'; target: number }
  | { op: 'probe' }
  | { op: 'arm'; eventId: string; status: string }
  | { op: 'collect'; timeoutMs: number }
  | { op: 'close' };

/** Every reply: the subscribers this process holds and how many failed; `times`: when each got the round's event (monotonic ms). */
export interface Reply {
  size: number;
  failures: number;
  unprobed?: number;
  times?: number[];
  duplicates?: number;
  wrong?: number;
  /** Event-loop utilisation from this process's first delivery of the round to its last. */
  elu?: number;
  error?: string;
}

const [url, kind] = process.argv.slice(2) as [string, 'graphql-ws' | 'raw'];

/** The subscription id each subscriber sent: a new UUID each, as graphql-ws clients make them. */
const ids: string[] = [];
const fleet = kind === 'raw' ? rawFleet(url, note) : liteFleet(url, note, (i) => (ids[i] = randomUUID()));
const sender = webhookSender(url, 1, kind === 'raw');
let probes = new ProbeTracker(0);

// The round: the event expected and, per subscriber, when it arrived (0: not yet).
let received = new Float64Array(0);
let expected = { eventId: '', status: '' };
let got = 0;
let duplicates = 0;
let wrong = 0;
let firstElu = performance.eventLoopUtilization();
let roundElu: number | undefined;
let allIn = () => {};

function note(i: number, data: Buffer): void {
  const at = monotonicMs();
  let update: { eventId?: unknown; status?: unknown } | undefined;
  try {
    type Next = { id?: string; type?: string; payload?: { errors?: unknown; data?: { transactionUpdated?: typeof update } } };
    const message = JSON.parse(data.toString()) as Next;
    const ours = kind === 'raw' || message.id === ids[i];
    if (message.type === 'next' && ours && !message.payload?.errors) update = message.payload?.data?.transactionUpdated;
  } catch {
    // not JSON: wrong below
  }
  const eventId = update?.eventId;
  if (typeof eventId !== 'string') return void (wrong += 1);
  if (eventId.startsWith('probe-')) return probes.note(i, eventId);
  if (eventId !== expected.eventId) return;
  if (received[i]! > 0) return void (duplicates += 1);
  if (got === 0) firstElu = performance.eventLoopUtilization();
  received[i] = at;
  if (update!.status !== expected.status) wrong += 1;
  if (++got === fleet.size) {
    roundElu = performance.eventLoopUtilization(firstElu).utilization;
    allIn();
  }
}

async function handle(request: Request): Promise<Partial<Reply>> {
  switch (request.op) {
    case 'grow':
      if (request.target > received.length) received = new Float64Array(request.target);
      await fleet.grow(request.target);
      return {};
    case 'probe':
      probes = new ProbeTracker(fleet.size);
      return { unprobed: await probes.probeAll((id) => sender.post(id, 0, randomUUID())) };
    case 'arm':
      received.fill(0);
      expected = request;
      [got, duplicates, wrong, roundElu] = [0, 0, 0, undefined];
      return {};
    case 'collect': {
      if (got < fleet.size) await Promise.race([new Promise<void>((resolve) => (allIn = resolve)), sleep(request.timeoutMs)]);
      await sleep(100); // late duplicates
      const times = [...received.subarray(0, fleet.size)].filter((t) => t > 0);
      const elu = roundElu ?? (got > 0 ? performance.eventLoopUtilization(firstElu).utilization : Number.NaN);
      return { times, duplicates, wrong, elu };
    }
    case 'close':
      await Promise.all([fleet.close(), sender.close()]);
      return {};
  }
}

// The parent sends one request at a time: each reply answers the last request, the first says this process is ready.
const reply = (answer: Partial<Reply>) => process.send?.({ size: fleet.size, failures: fleet.failures, ...answer });
process.on('message', (request: Request) => void handle(request).then(reply, (error: unknown) => reply({ error: String(error) })));
reply({});
