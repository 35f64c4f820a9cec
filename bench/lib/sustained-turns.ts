import { performance } from 'node:perf_hooks';
import { sleep, type Child } from './children.js';
import { ProbeTracker } from './delivery.js';
import { eventIdOf, liteFleet, rawFleet } from './subscribers.js';
import { runPacer } from './load-generator.js';
import { nowAbsolute, type PacedWebhook } from './webhook-pacer.js';
import { webhookSender } from './webhooks.js';

const SENDER_CONNECTIONS = 32;
/** After the sending: stop waiting once nothing arrived for QUIET_MS, or at the cap (bounds the bench's run time). */
const QUIET_MS = 5_000;
export const CAP_MS = 120_000;
const PREFIX = 's5_';

export type Side = Awaited<ReturnType<typeof openSide>>;
export type TurnResult = Awaited<ReturnType<Side['turn']>>;

/** Opens `subscribers` subscribers of `server` (a gateway, or the raw broadcaster) and probes every one. */
export async function openSide(label: string, server: Child, raw: boolean, subscribers: number, log: (m: string) => void) {
  // counts[i * total + n]: deliveries of webhook n to subscriber i (saturating at 255); arrivedAt: the first one's time;
  // reached[n]: subscribers webhook n has reached at least once.
  let current: ReturnType<typeof newTurn> | undefined;
  const newTurn = (prefix: string, total: number) => ({
    prefix,
    total,
    counts: new Uint8Array(subscribers * total),
    arrivedAt: new Float64Array(subscribers * total),
    reached: new Uint32Array(total),
    delivered: 0,
    foreign: 0,
    lastArrival: 0,
  });
  const probes = new ProbeTracker(subscribers);
  const sink = (i: number, data: Buffer) => {
    const id = eventIdOf(data);
    if (id === undefined) return void (side.wrong += 1);
    if (!id.startsWith(PREFIX)) return probes.note(i, id);
    const t = current;
    if (!t || !id.startsWith(t.prefix)) return void (side.strays += 1);
    const n = Number(id.slice(t.prefix.length));
    if (!(n >= 0 && n < t.total)) return void (t.foreign += 1);
    const k = i * t.total + n;
    t.lastArrival = performance.now();
    if (t.counts[k] === 0) {
      t.reached[n]! += 1;
      t.arrivedAt[k] = nowAbsolute();
    }
    if (t.counts[k]! < 255) t.counts[k]! += 1;
    t.delivered += 1;
  };
  const fleet = raw ? rawFleet(server.url, sink) : liteFleet(server.url, sink);
  const probeSender = webhookSender(server.url, 1, raw);
  // unprobed: subscribers never reached by a probe at the opening; wrong: messages that were not events; strays: events of a closed turn.
  const side = {
    raw,
    subscribers,
    unprobed: 0,
    wrong: 0,
    strays: 0,
    get failures() {
      return fleet.failures;
    },
    turn,
    async stop() {
      await fleet.close();
      await probeSender.close();
    },
  };
  log(`${label}: opening ${subscribers} subscribers`);
  await fleet.grow(subscribers);
  side.unprobed = await probes.probeAll((id) => probeSender.post(id, 0));

  /** One turn of webhooks; `lags`: each delivery's from the pacer's send to its receipt here (ms, unsorted). */
  async function turn(pacer: Child, rate: number, seconds: number, turnIndex: number) {
    const total = rate * seconds;
    const t = (current = newTurn(`${PREFIX}${turnIndex}_`, total));
    log(`${label}: turn ${turnIndex}, ${total} webhooks at ${rate}/s from the pacer process`);
    const elu = performance.eventLoopUtilization();
    const cpu = server.cpuSeconds();
    const t0 = performance.now();
    let answers: PacedWebhook[] | undefined;
    let pacerError: unknown;
    const running = runPacer(pacer, {
      target: server.url,
      mode: raw ? 'raw' : 'gateway',
      rate,
      seconds,
      prefix: t.prefix,
      connections: SENDER_CONNECTIONS,
      graceMs: CAP_MS,
    }).then(
      (results) => void (answers = results),
      (error: unknown) => void (pacerError = error),
    );
    const deadline = t0 + seconds * 1_000 + CAP_MS;
    let drained = false;
    while (performance.now() < deadline && pacerError === undefined) {
      // Every webhook answered 200 reached every subscriber.
      if (answers && (drained = t.reached.every((r, n) => r === subscribers || answers![n]!.status !== 200))) break;
      if (answers && performance.now() - Math.max(t.lastArrival, t0) > QUIET_MS) break;
      await sleep(100);
    }
    await running;
    if (pacerError !== undefined || !answers) throw new Error(`webhook pacer failed: ${String(pacerError)}`);
    await sleep(300); // late duplicates
    current = undefined;
    const busySeconds = (performance.now() - t0) / 1_000;
    const stillArriving = !drained && performance.now() - t.lastArrival < QUIET_MS;
    let acceptedCount = 0;
    let reachedAccepted = 0;
    let reachedOthers = 0;
    for (let n = 0; n < total; n += 1) {
      if (answers[n]!.status === 200) {
        acceptedCount += 1;
        reachedAccepted += t.reached[n]!;
      } else reachedOthers += t.reached[n]!;
    }
    // Delivery lag from the pacer's send to this process's receipt (both clocks are the machine's).
    const lags = new Float64Array(reachedAccepted + reachedOthers);
    let filled = 0;
    for (let k = 0; k < t.arrivedAt.length; k += 1) if (t.arrivedAt[k]! > 0) lags[filled++] = t.arrivedAt[k]! - answers[k % total]!.sentAt;
    let duplicates = 0;
    for (const c of t.counts) if (c > 1) duplicates += c - 1;
    const missing = acceptedCount * subscribers - reachedAccepted;
    return {
      seconds,
      answers,
      acceptedCount,
      reachedAccepted,
      reachedOthers,
      delivered: t.delivered,
      lost: stillArriving ? 0 : missing,
      late: stillArriving ? missing : 0,
      duplicates,
      foreign: t.foreign,
      lags: lags.subarray(0, filled),
      deliverySeconds: Math.max(1e-3, (t.lastArrival - t0) / 1_000),
      drained,
      stillArriving,
      cores: (server.cpuSeconds() - cpu) / busySeconds,
      receiverElu: performance.eventLoopUtilization(elu).utilization,
      busySeconds,
    };
  }

  return side;
}
