import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { monotonicMs, type WorkerReply, type WorkerRequest } from './fleet-protocol.js';
import { liteFleet, rawFleet } from './subscribers.js';

const [url, kind] = process.argv.slice(2) as [string, 'graphql-ws' | 'raw'];

/** The subscription id each subscriber sent: a new UUID each, as graphql-ws clients make them. */
const ids: string[] = [];
const fleet = kind === 'raw' ? rawFleet(url, note) : liteFleet(url, note, (i) => (ids[i] = randomUUID()));

// The round: the event expected and, per subscriber, when it arrived (monotonic ms, 0: not yet).
let received = new Float64Array(0);
let expectedId = '';
let expectedStatus = '';
let got = 0;
let duplicates = 0;
let wrong = 0;
// Event-loop utilisation from the round's first delivery to its last here: near 1, this process was busy all along.
let firstElu = performance.eventLoopUtilization();
let roundElu: number | undefined;
// Probes: any event whose id starts with `probe-`, once per subscriber.
let probed = new Uint8Array(0);
let probedCount = 0;

const send = (reply: WorkerReply) => process.send?.(reply);

function note(i: number, data: Buffer): void {
  const at = monotonicMs();
  let update: { eventId?: unknown; status?: unknown } | undefined;
  try {
    const message = JSON.parse(data.toString()) as {
      id?: string;
      type?: string;
      payload?: { errors?: unknown; data?: { transactionUpdated?: { eventId?: unknown; status?: unknown } } };
    };
    const ours = kind === 'raw' || message.id === ids[i];
    if (message.type === 'next' && ours && !message.payload?.errors) update = message.payload?.data?.transactionUpdated;
  } catch {
    // not JSON: wrong below
  }
  const eventId = update?.eventId;
  if (typeof eventId !== 'string') return void (wrong += 1);
  if (eventId.startsWith('probe-')) {
    if (!probed[i]) {
      probed[i] = 1;
      if (++probedCount === fleet.size) send({ event: 'probed' });
    }
    return;
  }
  if (eventId !== expectedId) return;
  if (received[i]! > 0) return void (duplicates += 1);
  if (got === 0) firstElu = performance.eventLoopUtilization();
  received[i] = at;
  if (update!.status !== expectedStatus) wrong += 1;
  if (++got === fleet.size) {
    roundElu = performance.eventLoopUtilization(firstElu).utilization;
    send({ event: 'done' });
  }
}

async function grow(target: number): Promise<void> {
  if (target > received.length) {
    received = new Float64Array(target);
    const more = new Uint8Array(target);
    more.set(probed);
    probed = more;
  }
  await fleet.grow(target);
}

async function handle(request: WorkerRequest): Promise<WorkerReply> {
  const base = { seq: request.seq, size: fleet.size, failures: fleet.failures };
  switch (request.op) {
    case 'grow':
      await grow(request.target);
      return { ...base, size: fleet.size, failures: fleet.failures };
    case 'probe-reset':
      probed.fill(0);
      probedCount = 0;
      return base;
    case 'probe-count':
      return { ...base, probed: probedCount };
    case 'arm':
      received.fill(0);
      expectedId = request.eventId;
      expectedStatus = request.status;
      got = 0;
      duplicates = 0;
      wrong = 0;
      roundElu = undefined;
      return base;
    case 'collect': {
      const times: number[] = [];
      for (let i = 0; i < fleet.size; i += 1) if (received[i]! > 0) times.push(received[i]!);
      const elu = roundElu ?? (got > 0 ? performance.eventLoopUtilization(firstElu).utilization : Number.NaN);
      return { ...base, times, duplicates, wrong, elu };
    }
    case 'close':
      await fleet.close();
      return base;
  }
}

process.on('message', (request: WorkerRequest) => {
  handle(request).then(send, (error: unknown) =>
    send({ seq: request.seq, size: fleet.size, failures: fleet.failures, error: String(error) }),
  );
});
send({ event: 'ready' });
