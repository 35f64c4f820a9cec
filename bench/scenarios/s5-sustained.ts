import { performance } from 'node:perf_hooks';
import { sleep, type Child } from '../lib/children.js';
import { DeliveryTracker, fdsNeeded, openFilesLimit } from '../lib/delivery.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { startGateway, startRawWs } from '../lib/servers.js';
import { fmt, quantile } from '../lib/stats.js';
import { eventIdOf, liteFleet, rawFleet } from '../lib/subscribers.js';
import { verdict, type Row } from '../lib/table.js';
import { statusFor, webhookSender, type Posted } from '../lib/webhooks.js';

/*
 * S5: webhooks at a steady, clock-paced rate to 1 000 subscribers. Every
 * subscriber's deliveries are compared with the webhooks the gateway answered
 * 200: lost = answered, never delivered (once deliveries stopped arriving);
 * late = not delivered yet when the wait was capped while still arriving;
 * duplicated = delivered more than once. The raw ws broadcaster under the same
 * offered load (shorter) shows what this machine can deliver at all.
 * Sizes: BENCH_S5_RATE / BENCH_S5_SECONDS / BENCH_S5_SUBSCRIBERS.
 */

const RATE = Number(process.env.BENCH_S5_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_S5_SECONDS ?? 30);
const RAW_SECONDS = Math.min(SECONDS, 10);
const SUBSCRIBERS = Number(process.env.BENCH_S5_SUBSCRIBERS ?? 1_000);
const SENDER_CONNECTIONS = 32;
/** After the sending: stop waiting once nothing arrived for QUIET_MS, or at the cap (bounds the bench's run time). */
const QUIET_MS = 5_000;
const CAP_MS = 45_000;
const PREFIX = 's5_';
const message = (eventId: string, status: string) => JSON.stringify({ id: '1', type: 'next', payload: { data: { transactionUpdated: { eventId, status } } } });

async function sustained(server: Child, raw: boolean, seconds: number, log: (m: string) => void): Promise<Row> {
  const total = RATE * seconds;
  // counts[i * total + n]: deliveries of webhook n to subscriber i (saturating at 255).
  const counts = new Uint8Array(SUBSCRIBERS * total);
  // reached[n]: subscribers webhook n has reached at least once.
  const reached = new Uint32Array(total);
  const sentAt = new Float64Array(total);
  const lagMs = new Uint32Array(CAP_MS + seconds * 1_000 + 1);
  let delivered = 0;
  let foreign = 0;
  let wrong = 0;
  let lastArrival = 0;
  const probes = new DeliveryTracker(SUBSCRIBERS);
  const sink = (i: number, data: Buffer) => {
    const id = eventIdOf(data);
    if (id === undefined) return void (wrong += 1);
    if (!id.startsWith(PREFIX)) return probes.note(i, id, undefined);
    const n = Number(id.slice(PREFIX.length));
    if (!(n >= 0 && n < total)) return void (foreign += 1);
    const k = i * total + n;
    if (counts[k] === 0) reached[n]! += 1;
    if (counts[k]! < 255) counts[k]! += 1;
    delivered += 1;
    lastArrival = performance.now();
    lagMs[Math.min(lagMs.length - 1, Math.round(lastArrival - sentAt[n]!))]! += 1;
  };
  const fleet = raw ? rawFleet(server.url, sink) : liteFleet(server.url, sink);
  const sender = webhookSender(server.url, SENDER_CONNECTIONS);
  const post = (id: string, n: number) => (raw ? sender.postRaw('/broadcast', message(id, statusFor(n))) : sender.post(id, n));
  try {
    log(`${raw ? 'raw' : 'gateway'}: opening ${SUBSCRIBERS} subscribers`);
    await fleet.grow(SUBSCRIBERS);
    const unprobed = await probes.probeAll((id) => post(id, 0));
    log(`${raw ? 'raw' : 'gateway'}: ${total} webhooks at ${RATE}/s`);
    const answers: Array<Posted | undefined> = Array.from({ length: total }, () => undefined);
    let answered = 0;
    const elu = performance.eventLoopUtilization();
    const cpu = server.cpuSeconds();
    const t0 = performance.now();
    // Paced by the clock, not by answers: a slow server gets the same offered load.
    for (let n = 0; n < total; ) {
      const due = Math.min(total, Math.floor(((performance.now() - t0) * RATE) / 1_000) + 1);
      for (; n < due; n += 1) {
        const k = n;
        sentAt[k] = performance.now();
        const settle = (p: Posted) => {
          answers[k] = p;
          answered += 1;
        };
        post(`${PREFIX}${k}`, k).then(settle, () => settle({ status: 0, ms: Number.NaN, at: 0 }));
      }
      await sleep(1);
    }
    const sentSeconds = (performance.now() - t0) / 1_000;
    const deadline = performance.now() + CAP_MS;
    const accepted = (n: number) => answers[n]?.status === 200;
    const complete = () => answered === total && reached.every((r, n) => !accepted(n) || r === SUBSCRIBERS);
    let drained = false;
    while (performance.now() < deadline) {
      if (complete()) {
        drained = true;
        break;
      }
      if (answered === total && performance.now() - Math.max(lastArrival, t0) > QUIET_MS) break;
      await sleep(100);
    }
    await sleep(300); // late duplicates
    const busySeconds = (performance.now() - t0) / 1_000;
    const cores = (server.cpuSeconds() - cpu) / busySeconds;
    const loadgen = performance.eventLoopUtilization(elu).utilization;
    const stillArriving = !drained && performance.now() - lastArrival < QUIET_MS;

    let acceptedCount = 0;
    let reachedAccepted = 0;
    let reachedOthers = 0;
    for (let n = 0; n < total; n += 1) {
      if (accepted(n)) {
        acceptedCount += 1;
        reachedAccepted += reached[n]!;
      } else reachedOthers += reached[n]!;
    }
    let duplicates = 0;
    for (const c of counts) if (c > 1) duplicates += c - 1;
    const expected = acceptedCount * SUBSCRIBERS;
    const missing = expected - reachedAccepted;
    const lost = stillArriving ? 0 : missing;
    const late = stillArriving ? missing : 0;
    const unanswered = total - answered;
    const rejected = answers.filter((a) => a !== undefined && a.status !== 200).length;
    // An unanswered webhook waited at least until the cap: it counts as infinitely slow, not as absent.
    const answerMs = answers.map((a) => (a === undefined ? Number.POSITIVE_INFINITY : a.ms));
    const lag = (q: number) => {
      let seen = 0;
      for (let ms = 0; ms < lagMs.length; ms += 1) if ((seen += lagMs[ms]!) >= Math.ceil(q * delivered) && delivered > 0) return ms;
      return Number.NaN;
    };
    const answerP99 = quantile(answerMs, 0.99);
    const answerText = (q: number) => {
      const v = quantile(answerMs, q);
      return Number.isFinite(v) ? fmt(v, 1) : `> ${fmt(busySeconds * 1_000)} (unanswered)`;
    };
    const rate = delivered / Math.max(1e-3, (lastArrival - t0) / 1_000);
    const errors = lost + duplicates + wrong + foreign + rejected + unanswered + unprobed + fleet.failures;
    const ok = lost === 0 && late === 0 && duplicates === 0 && answerP99 <= 50 && errors === 0;
    return {
      scenario: 'S5',
      variant: `${raw ? 'raw ws broadcast (baseline)' : 'gateway, defaults'}: ${RATE} webhooks/s × ${seconds} s → ${fmt(SUBSCRIBERS)} subscribers`,
      value: `delivered ${fmt(reachedAccepted)} of ${fmt(expected)} (${fmt(acceptedCount)} webhooks answered 200 × ${fmt(SUBSCRIBERS)}); lost ${fmt(lost)}, late ${fmt(late)}, dup ${fmt(duplicates)}; ${fmt(rate)} deliveries/s; answer p50 ${answerText(0.5)} ms`,
      p99: answerText(0.99),
      ratio: '',
      target: raw ? '' : `0 lost/late, 0 dup, answer p99 ≤ 50 ms ${verdict(ok)}`,
      calls: '',
      errors:
        errors === 0
          ? '0'
          : [lost && `lost ${lost}`, duplicates && `dup ${duplicates}`, rejected && `non-200 ${rejected}`, unanswered && `unanswered at cap ${unanswered}`, wrong && `wrong msgs ${wrong}`, foreign && `unknown ids ${foreign}`, unprobed && `unprobed ${unprobed}`, fleet.failures && `conn failures ${fleet.failures}`]
              .filter(Boolean)
              .join(', '),
      notes: [
        `delivery lag p50 ${fmt(lag(0.5))} / p99 ${fmt(lag(0.99))} / max ${fmt(lag(1))} ms`,
        `offered ${fmt(RATE * SUBSCRIBERS)} deliveries/s; posted in ${fmt(sentSeconds, 1)} s`,
        reachedOthers ? `${fmt(reachedOthers)} deliveries of webhooks not answered 200` : '',
        drained ? `all delivered ${fmt((lastArrival - t0) / 1_000, 1)} s after the first POST` : stillArriving ? `wait capped ${CAP_MS / 1_000} s after the last POST while deliveries still arrived` : 'deliveries stopped before all arrived',
        `server CPU ${fmt(cores, 2)} cores; loadgen ELU ${fmt(loadgen * 100)}%${loadgen > 0.95 ? ' (saturated)' : ''}`,
      ]
        .filter(Boolean)
        .join('; '),
      ...(errors > 0 ? { voided: 'lost, duplicated, rejected or unanswered events' } : {}),
    };
  } finally {
    await fleet.close();
    await sender.close();
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
    const gateway = await withChild(startGateway(upstream.url, {}), (server) => sustained(server, false, SECONDS, log));
    const raw = await withChild(startRawWs(), (server) => sustained(server, true, RAW_SECONDS, log));
    return [gateway, raw];
  },
};
