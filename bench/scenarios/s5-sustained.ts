import { performance } from 'node:perf_hooks';
import { sleep, type Child } from '../lib/children.js';
import { ProbeTracker, fdsNeeded, openFilesLimit } from '../lib/delivery.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { startGateway, startRawWs, startWebhookPacer } from '../lib/servers.js';
import { fmt, quantile } from '../lib/stats.js';
import { eventIdOf, liteFleet, rawFleet } from '../lib/subscribers.js';
import { verdict, type Row } from '../lib/table.js';
import { nowAbsolute, rawMessage, runPacer, type PacedWebhook } from '../lib/webhook-pacer.js';
import { statusFor, webhookSender } from '../lib/webhooks.js';

/*
 * S5: webhooks at a steady, clock-paced rate to 1 000 subscribers, sent and
 * timed by a pacer process of their own (webhook-pacer.ts). Every
 * subscriber's deliveries are compared with the webhooks the gateway answered
 * 200: lost = answered, never delivered (once deliveries stopped arriving);
 * duplicated = delivered more than once. Deliveries still arriving when the
 * wait is capped void the figure too: they could not be told from lost. The
 * raw ws broadcaster under the same offered load (shorter) shows what this
 * machine can deliver at all.
 * Sizes: BENCH_S5_RATE / BENCH_S5_SECONDS / BENCH_S5_SUBSCRIBERS.
 */

const RATE = Number(process.env.BENCH_S5_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_S5_SECONDS ?? 30);
const RAW_SECONDS = Math.min(SECONDS, 10);
const SUBSCRIBERS = Number(process.env.BENCH_S5_SUBSCRIBERS ?? 1_000);
const SENDER_CONNECTIONS = 32;
/** After the sending: stop waiting once nothing arrived for QUIET_MS, or at the cap (bounds the bench's run time). */
const QUIET_MS = 5_000;
const CAP_MS = 120_000;
const PREFIX = 's5_';

async function sustained(server: Child, pacer: Child, raw: boolean, seconds: number, log: (m: string) => void): Promise<Row> {
  const total = RATE * seconds;
  // counts[i * total + n]: deliveries of webhook n to subscriber i (saturating at 255); arrivedAt: the first one's time.
  const counts = new Uint8Array(SUBSCRIBERS * total);
  const arrivedAt = new Float64Array(SUBSCRIBERS * total);
  // reached[n]: subscribers webhook n has reached at least once.
  const reached = new Uint32Array(total);
  let delivered = 0;
  let foreign = 0;
  let wrong = 0;
  let lastArrival = 0;
  const probes = new ProbeTracker(SUBSCRIBERS);
  const sink = (i: number, data: Buffer) => {
    const id = eventIdOf(data);
    if (id === undefined) return void (wrong += 1);
    if (!id.startsWith(PREFIX)) return probes.note(i, id);
    const n = Number(id.slice(PREFIX.length));
    if (!(n >= 0 && n < total)) return void (foreign += 1);
    const k = i * total + n;
    lastArrival = performance.now();
    if (counts[k] === 0) {
      reached[n]! += 1;
      arrivedAt[k] = nowAbsolute();
    }
    if (counts[k]! < 255) counts[k]! += 1;
    delivered += 1;
  };
  const fleet = raw ? rawFleet(server.url, sink) : liteFleet(server.url, sink);
  const probeSender = webhookSender(server.url, 1);
  try {
    log(`${raw ? 'raw' : 'gateway'}: opening ${SUBSCRIBERS} subscribers`);
    await fleet.grow(SUBSCRIBERS);
    const unprobed = await probes.probeAll((id) => (raw ? probeSender.postRaw('/broadcast', rawMessage(id, statusFor(0))) : probeSender.post(id, 0)));
    log(`${raw ? 'raw' : 'gateway'}: ${total} webhooks at ${RATE}/s from the pacer process`);
    const elu = performance.eventLoopUtilization();
    const cpu = server.cpuSeconds();
    const t0 = performance.now();
    let answers: PacedWebhook[] | undefined;
    let pacerError: unknown;
    const running = runPacer(pacer, { target: server.url, mode: raw ? 'raw' : 'gateway', rate: RATE, seconds, prefix: PREFIX, connections: SENDER_CONNECTIONS, graceMs: CAP_MS }).then(
      (results) => void (answers = results),
      (error: unknown) => void (pacerError = error),
    );
    const deadline = t0 + seconds * 1_000 + CAP_MS;
    let drained = false;
    while (performance.now() < deadline && pacerError === undefined) {
      // Every webhook answered 200 reached every subscriber.
      if (answers && (drained = reached.every((r, n) => r === SUBSCRIBERS || answers![n]!.status !== 200))) break;
      if (answers && performance.now() - Math.max(lastArrival, t0) > QUIET_MS) break;
      await sleep(100);
    }
    await running;
    if (pacerError !== undefined || !answers) throw new Error(`webhook pacer failed: ${String(pacerError)}`);
    await sleep(300); // late duplicates
    const busySeconds = (performance.now() - t0) / 1_000;
    const cores = (server.cpuSeconds() - cpu) / busySeconds;
    const loadgen = performance.eventLoopUtilization(elu).utilization;
    const stillArriving = !drained && performance.now() - lastArrival < QUIET_MS;

    const accepted = (n: number) => answers![n]!.status === 200;
    let acceptedCount = 0;
    let reachedAccepted = 0;
    let reachedOthers = 0;
    for (let n = 0; n < total; n += 1) {
      if (accepted(n)) {
        acceptedCount += 1;
        reachedAccepted += reached[n]!;
      } else reachedOthers += reached[n]!;
    }
    // Delivery lag from the pacer's send to this process's receipt (both clocks are the machine's), sorted in place.
    const lags = new Float64Array(reachedAccepted + reachedOthers);
    let filled = 0;
    for (let k = 0; k < arrivedAt.length; k += 1) if (arrivedAt[k]! > 0) lags[filled++] = arrivedAt[k]! - answers[k % total]!.sentAt;
    lags.sort();
    const lag = (q: number) => (filled === 0 ? Number.NaN : lags[Math.min(filled - 1, Math.max(0, Math.ceil(q * filled) - 1))]!);
    let duplicates = 0;
    for (const c of counts) if (c > 1) duplicates += c - 1;
    const expected = acceptedCount * SUBSCRIBERS;
    const missing = expected - reachedAccepted;
    const lost = stillArriving ? 0 : missing;
    const late = stillArriving ? missing : 0;
    const unanswered = answers.filter((a) => a.status === 0).length;
    const rejected = answers.filter((a) => a.status !== 0 && a.status !== 200).length;
    // An unanswered webhook waited at least until the pacer gave up: infinitely slow, not absent.
    const answerMs = answers.map((a) => (a.status === 0 ? Number.POSITIVE_INFINITY : a.ms));
    const answerP99 = quantile(answerMs, 0.99);
    const answerText = (q: number) => {
      const v = quantile(answerMs, q);
      return Number.isFinite(v) ? fmt(v, 1) : `> ${fmt(busySeconds * 1_000)} (unanswered)`;
    };
    const rate = delivered / Math.max(1e-3, (lastArrival - t0) / 1_000);
    const errors = lost + late + duplicates + wrong + foreign + rejected + unanswered + unprobed + fleet.failures;
    const ok = errors === 0 && answerP99 <= 50;
    return {
      scenario: 'S5',
      variant: `${raw ? 'raw ws broadcast (baseline)' : 'gateway, defaults'}: ${RATE} webhooks/s × ${seconds} s → ${fmt(SUBSCRIBERS)} subscribers`,
      value: `delivered ${fmt(reachedAccepted)} of ${fmt(expected)} (${fmt(acceptedCount)} webhooks answered 200 × ${fmt(SUBSCRIBERS)}); lost ${fmt(lost)}, dup ${fmt(duplicates)}${late ? `, still arriving at the cap ${fmt(late)}` : ''}; ${fmt(rate)} deliveries/s; answer p50 ${answerText(0.5)} ms`,
      p99: answerText(0.99),
      ratio: '',
      target: raw ? '' : `0 lost, 0 dup, answer p99 ≤ 50 ms ${verdict(ok)}`,
      calls: '',
      errors:
        errors === 0
          ? '0'
          : [lost && `lost ${lost}`, late && `undelivered at the cap ${late}`, duplicates && `dup ${duplicates}`, rejected && `non-200 ${rejected}`, unanswered && `unanswered ${unanswered}`, wrong && `wrong msgs ${wrong}`, foreign && `unknown ids ${foreign}`, unprobed && `unprobed ${unprobed}`, fleet.failures && `conn failures ${fleet.failures}`]
              .filter(Boolean)
              .join(', '),
      notes: [
        `delivery lag p50 ${fmt(lag(0.5))} / p99 ${fmt(lag(0.99))} / max ${fmt(lag(1))} ms`,
        `offered ${fmt(RATE * SUBSCRIBERS)} deliveries/s; webhooks posted and timed by a separate pacer process`,
        reachedOthers ? `${fmt(reachedOthers)} deliveries of webhooks not answered 200` : '',
        drained ? `all delivered ${fmt((lastArrival - t0) / 1_000, 1)} s after the first POST` : stillArriving ? `wait capped ${CAP_MS / 1_000} s after the sending while deliveries still arrived` : 'deliveries stopped before all arrived',
        `server CPU ${fmt(cores, 2)} cores; receiver ELU ${fmt(loadgen * 100)}%${loadgen > 0.95 ? ' (saturated)' : ''}`,
      ]
        .filter(Boolean)
        .join('; '),
      ...(errors > 0 ? { voided: 'lost, duplicated, rejected, unanswered or undelivered events' } : {}),
    };
  } finally {
    await fleet.close();
    await probeSender.close();
  }
}

export const s5: Scenario = {
  name: 'S5',
  title: 'sustained events',
  async run({ upstream, log }) {
    const limit = openFilesLimit();
    if (!(limit >= fdsNeeded(SUBSCRIBERS))) {
      return [{ scenario: 'S5', variant: `${RATE} webhooks/s → ${SUBSCRIBERS} subscribers`, value: '', p99: '', ratio: '', target: '', calls: '', errors: '', notes: '', voided: `ulimit -n ${limit} < ${fdsNeeded(SUBSCRIBERS)} needed` }];
    }
    return withChild(startWebhookPacer(), async (pacer) => {
      const gateway = await withChild(startGateway(upstream.url, {}), (server) => sustained(server, pacer, false, SECONDS, log));
      const raw = await withChild(startRawWs(), (server) => sustained(server, pacer, true, RAW_SECONDS, log));
      return [gateway, raw];
    });
  },
};
