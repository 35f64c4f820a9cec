import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { monotonicMs, type WorkerReply, type WorkerRequest } from './fleet-protocol.js';
import { SUBSCRIPTION } from './subscribers.js';

const [url, kind, key] = process.argv.slice(2) as [string, 'graphql-ws' | 'raw', string];
const BATCH = 200;

const sockets: WebSocket[] = [];
/** The subscription id each subscriber sent: a new UUID each, as graphql-ws clients make them. */
const ids: string[] = [];
const failed = new Set<number>();
let closing = false;

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
    if (message.type === 'ping') return void sockets[i]!.send('{"type":"pong"}');
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
      if (++probedCount === sockets.length) send({ event: 'probed' });
    }
    return;
  }
  if (eventId !== expectedId) return;
  if (received[i]! > 0) return void (duplicates += 1);
  if (got === 0) firstElu = performance.eventLoopUtilization();
  received[i] = at;
  if (update!.status !== expectedStatus) wrong += 1;
  if (++got === sockets.length) {
    roundElu = performance.eventLoopUtilization(firstElu).utilization;
    send({ event: 'done' });
  }
}

function open(i: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const ws = new WebSocket(url, kind === 'raw' ? undefined : 'graphql-transport-ws', { perMessageDeflate: false });
    sockets[i] = ws;
    ids[i] = randomUUID();
    let ready = kind === 'raw';
    ws.on('open', () => {
      if (kind === 'raw') return resolve();
      ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: key } }));
    });
    ws.on('message', (data: Buffer) => {
      if (ready) return note(i, data);
      // The only message before the subscribe is connection_ack (anything else fails the subscriber).
      if (!data.includes('"connection_ack"')) return reject(new Error(data.toString()));
      ready = true;
      ws.send(JSON.stringify({ id: ids[i], type: 'subscribe', payload: { query: SUBSCRIPTION } }));
      resolve();
    });
    ws.on('error', reject);
    ws.on('close', () => {
      if (!closing) failed.add(i);
      reject(new Error('closed'));
    });
  });
}

async function grow(target: number): Promise<void> {
  if (target > received.length) {
    received = new Float64Array(target);
    const more = new Uint8Array(target);
    more.set(probed);
    probed = more;
  }
  for (let start = sockets.length; start < target; start += BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(BATCH, target - start) }, (_, k) => open(start + k).catch(() => void failed.add(start + k))),
    );
  }
}

async function close(): Promise<void> {
  closing = true;
  const all = sockets.map((ws) => (ws.readyState === WebSocket.CLOSED ? Promise.resolve() : new Promise((r) => ws.once('close', r))));
  for (const ws of sockets) ws.close(1000);
  await Promise.race([Promise.all(all), new Promise((r) => setTimeout(r, 10_000))]);
  for (const ws of sockets) ws.terminate();
}

async function handle(request: WorkerRequest): Promise<WorkerReply> {
  const base = { seq: request.seq, size: sockets.length, failures: failed.size };
  switch (request.op) {
    case 'grow':
      await grow(request.target);
      return { ...base, size: sockets.length, failures: failed.size };
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
      for (let i = 0; i < sockets.length; i += 1) if (received[i]! > 0) times.push(received[i]!);
      const elu = roundElu ?? (got > 0 ? performance.eventLoopUtilization(firstElu).utilization : Number.NaN);
      return { ...base, times, duplicates, wrong, elu };
    }
    case 'close':
      await close();
      return base;
  }
}

process.on('message', (request: WorkerRequest) => {
  handle(request).then(send, (error: unknown) =>
    send({ seq: request.seq, size: sockets.length, failures: failed.size, error: String(error) }),
  );
});
send({ event: 'ready' });
