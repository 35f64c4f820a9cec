import { redisServerOnPath } from '../../test/helpers/redis-server.js';
import { sleep, type Child } from '../lib/children.js';
import { fdsNeeded, openFilesLimit } from '../lib/delivery.js';
import { historyTotal } from '../lib/history-series.js';
import { startRedis } from '../lib/redis-child.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { startGateway, startRawWs, startWebhookPacer } from '../lib/servers.js';
import { fmt, quantile } from '../lib/stats.js';
import { CAP_MS, openSide, type Side, type TurnResult } from '../lib/sustained-turns.js';
import { verdict, type Row } from '../lib/table.js';

/*
 * S5: webhooks at a steady, clock-paced rate to 1 000 subscribers, sent and
 * timed by a pacer process of their own (webhook-pacer.ts, sustained-turns.ts).
 * Two gateways, history on (the default) and HISTORY=off, each with its own
 * subscribers, take turns: BENCH_S5_ROUNDS rounds, on-off then off-on, each
 * turn BENCH_S5_SECONDS ÷ rounds long, so each gets BENCH_S5_SECONDS in all
 * and drift of the machine lands on both; what the history adds to a
 * webhook's answer is the difference of their answer times. The same again
 * with REDIS_URL (events and dedupe in a redis-server of the bench's own, each
 * gateway's history in its own process, fed from that event log;
 * BENCH_S5_REDIS=off skips it). The raw ws broadcaster under the same offered
 * load (shorter) shows what this machine can deliver at all.
 * Sizes: BENCH_S5_RATE / BENCH_S5_SECONDS / BENCH_S5_SUBSCRIBERS.
 */

const RATE = Number(process.env.BENCH_S5_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_S5_SECONDS ?? 30);
const ROUNDS = Number(process.env.BENCH_S5_ROUNDS ?? 2);
const TURN_SECONDS = Math.max(1, Math.round(SECONDS / ROUNDS));
const RAW_SECONDS = Math.min(SECONDS, 10);
/** A turn per gateway before the measured ones, so neither is measured while V8 still compiles its webhook path. */
const WARMUP_SECONDS = Math.min(3, TURN_SECONDS);
const SUBSCRIBERS = Number(process.env.BENCH_S5_SUBSCRIBERS ?? 1_000);
const WITH_REDIS = process.env.BENCH_S5_REDIS !== 'off';
/** Added to a webhook's answer p99 by the history, at most: the goal S5 judges. */
const HISTORY_BUDGET_MS = 1;

/** Answer times (ms) of every webhook of the turns; one never answered counts as infinitely slow, not absent. */
const answerTimes = (turns: TurnResult[]) => turns.flatMap((t) => t.answers.map((a) => (a.status === 0 ? Number.POSITIVE_INFINITY : a.ms)));

/** Errors of a turn's own webhooks (the side's own counters add the rest). */
const turnErrors = (t: TurnResult) => t.lost + t.late + t.duplicates + t.foreign + t.answers.filter((a) => a.status !== 200).length;

/** A side's row from its measured turns; errors in its warm-up turn void it too. */
function sideRow(side: Side, turns: TurnResult[], what: string, warmUp?: TurnResult): Row {
  const sum = (pick: (t: TurnResult) => number) => turns.reduce((n, t) => n + pick(t), 0);
  const warmUpErrors = warmUp ? turnErrors(warmUp) : 0;
  const seconds = sum((t) => t.seconds);
  const busySeconds = sum((t) => t.busySeconds);
  const acceptedCount = sum((t) => t.acceptedCount);
  const reachedAccepted = sum((t) => t.reachedAccepted);
  const reachedOthers = sum((t) => t.reachedOthers);
  const [lost, late, duplicates, foreign] = [sum((t) => t.lost), sum((t) => t.late), sum((t) => t.duplicates), sum((t) => t.foreign)];
  const answers = turns.flatMap((t) => t.answers);
  const unanswered = answers.filter((a) => a.status === 0).length;
  const rejected = answers.filter((a) => a.status !== 0 && a.status !== 200).length;
  const answerMs = answerTimes(turns);
  const answerText = (q: number) => {
    const v = quantile(answerMs, q);
    return Number.isFinite(v) ? fmt(v, 1) : `> ${fmt(busySeconds * 1_000)} (unanswered)`;
  };
  const lags = new Float64Array(sum((t) => t.lags.length));
  turns.reduce((at, t) => (lags.set(t.lags, at), at + t.lags.length), 0);
  lags.sort();
  const lag = (q: number) => (lags.length === 0 ? Number.NaN : lags[Math.min(lags.length - 1, Math.max(0, Math.ceil(q * lags.length) - 1))]!);
  const expected = acceptedCount * side.subscribers;
  const errors = lost + late + duplicates + side.wrong + side.strays + foreign + rejected + unanswered + side.unprobed + side.failures + warmUpErrors;
  const ok = errors === 0 && quantile(answerMs, 0.99) <= 50;
  const timed = (f: (t: TurnResult) => number) => sum((t) => f(t) * t.busySeconds) / busySeconds;
  const drained = turns.every((t) => t.drained);
  const turnsText = turns.length > 1 ? ` (${turns.length} turns of ${fmt(turns[0]!.seconds)} s)` : '';
  return {
    scenario: 'S5',
    variant: `${what}: ${RATE} webhooks/s × ${fmt(seconds)} s${turnsText} → ${fmt(side.subscribers)} subscribers`,
    value: `delivered ${fmt(reachedAccepted)} of ${fmt(expected)} (${fmt(acceptedCount)} webhooks answered 200 × ${fmt(side.subscribers)}); lost ${fmt(lost)}, dup ${fmt(duplicates)}${late ? `, still arriving at the cap ${fmt(late)}` : ''}; ${fmt(sum((t) => t.delivered) / sum((t) => t.deliverySeconds))} deliveries/s; answer p50 ${answerText(0.5)} ms`,
    p99: answerText(0.99),
    ratio: '',
    target: side.raw ? '' : `0 lost, 0 dup, answer p99 ≤ 50 ms ${verdict(ok)}`,
    calls: '',
    errors:
      errors === 0
        ? '0'
        : [lost && `lost ${lost}`, late && `undelivered at the cap ${late}`, duplicates && `dup ${duplicates}`, rejected && `non-200 ${rejected}`, unanswered && `unanswered ${unanswered}`, side.wrong && `wrong msgs ${side.wrong}`, (foreign || side.strays) && `unknown ids ${foreign + side.strays}`, side.unprobed && `unprobed ${side.unprobed}`, side.failures && `conn failures ${side.failures}`, warmUpErrors && `in the warm-up turn ${warmUpErrors}`]
            .filter(Boolean)
            .join(', '),
    notes: [
      `delivery lag p50 ${fmt(lag(0.5))} / p99 ${fmt(lag(0.99))} / max ${fmt(lag(1))} ms`,
      `offered ${fmt(RATE * side.subscribers)} deliveries/s; webhooks posted and timed by a separate pacer process`,
      reachedOthers ? `${fmt(reachedOthers)} deliveries of webhooks not answered 200` : '',
      drained
        ? `all delivered ${turns.map((t) => fmt(t.deliverySeconds, 1)).join(' / ')} s after each turn's first POST`
        : turns.some((t) => t.stillArriving)
          ? `wait capped ${CAP_MS / 1_000} s after the sending while deliveries still arrived`
          : 'deliveries stopped before all arrived',
      `server CPU ${fmt(timed((t) => t.cores), 2)} cores; receiver ELU ${fmt(timed((t) => t.receiverElu) * 100)}%${turns.some((t) => t.receiverElu > 0.95) ? ' (saturated)' : ''}`,
    ]
      .filter(Boolean)
      .join('; '),
    ...(errors > 0 ? { voided: 'lost, duplicated, rejected, unanswered or undelivered events' } : {}),
  };
}

/** What the history adds to a webhook's answer: on − off, pooled over the turns, and round by round. */
function differenceRow(where: string, on: Row, off: Row, onTurns: TurnResult[], offTurns: TurnResult[], held: number | string): Row {
  const q = (turns: TurnResult[], p: number) => quantile(answerTimes(turns), p);
  const signed = (ms: number) => `${ms >= 0 ? '+' : '−'}${fmt(Math.abs(ms), 2)}`;
  const [p50On, p50Off, p99On, p99Off] = [q(onTurns, 0.5), q(offTurns, 0.5), q(onTurns, 0.99), q(offTurns, 0.99)];
  const delta = p99On - p99Off;
  const byRound = onTurns.map((t, r) => q([t], 0.99) - q([offTurns[r]!], 0.99));
  const rounds = byRound.map(signed);
  // Rounds that disagree by more than the budget say the machine's noise, not the history, decides the verdict.
  const spread = Math.max(...byRound) - Math.min(...byRound);
  const noisy = spread > HISTORY_BUDGET_MS ? ` (the rounds differ by ${fmt(spread, 2)} ms: noise of that size)` : '';
  const fed = typeof held === 'number' && held > 0;
  const voided = on.voided || off.voided ? 'a side had errors' : fed ? undefined : `the history-on gateway's history holds ${typeof held === 'number' ? fmt(held) : `nothing readable (${held})`}${where === 'Redis' ? ' with REDIS_URL' : ''}`;
  return {
    scenario: 'S5',
    variant: `history on − off, ${where}: webhook answer time`,
    value: `p50 ${fmt(p50On, 2)} − ${fmt(p50Off, 2)} = ${signed(p50On - p50Off)} ms; p99 ${fmt(p99On, 2)} − ${fmt(p99Off, 2)} = ${signed(delta)} ms`,
    p99: signed(delta),
    ratio: '',
    target: `p99 on − off ≤ ${HISTORY_BUDGET_MS} ms ${voided ? 'VOID' : `${verdict(delta <= HISTORY_BUDGET_MS)}${noisy}`}`,
    calls: '',
    errors: voided ? '' : '0',
    notes: `p99 on − off by round: ${rounds.join(', ')} ms; answer times as the pacer process measures them (POST sent → answer read), after a ${WARMUP_SECONDS} s warm-up turn each (not counted); the history held ${typeof held === 'number' ? fmt(held) : held} transactions after the turns`,
    ...(voided ? { voided } : {}),
  };
}

/** History on and off, each with its own subscribers, in turns: on-off, off-on, … */
async function onOff(upstreamUrl: string, pacer: Child, where: 'in process' | 'Redis', env: (side: string) => Record<string, string>, log: (m: string) => void): Promise<Row[]> {
  const label = where === 'in process' ? 'gateway, defaults (history on, in process)' : 'gateway, REDIS_URL (events in Redis, history in process fed from their log), history on';
  return withChild(startGateway(upstreamUrl, {}, env('on')), (onServer) =>
    withChild(startGateway(upstreamUrl, {}, { ...env('off'), HISTORY: 'off' }), async (offServer) => {
      const on = await openSide(`${where}, history on`, onServer, false, SUBSCRIBERS, log);
      try {
        const off = await openSide(`${where}, history off`, offServer, false, SUBSCRIBERS, log);
        try {
          const warmUps = { on: await on.turn(pacer, RATE, WARMUP_SECONDS, 100), off: await off.turn(pacer, RATE, WARMUP_SECONDS, 101) };
          const turns: Record<'on' | 'off', TurnResult[]> = { on: [], off: [] };
          for (let round = 0; round < ROUNDS; round += 1) {
            for (const side of round % 2 === 0 ? [on, off] : [off, on]) {
              (side === on ? turns.on : turns.off).push(await side.turn(pacer, RATE, TURN_SECONDS, round * 2 + (side === on ? 0 : 1)));
              await sleep(500);
            }
          }
          const held = await historyTotal(onServer.url);
          const onRow = sideRow(on, turns.on, label, warmUps.on);
          const offRow = sideRow(off, turns.off, where === 'in process' ? 'gateway, HISTORY=off' : 'gateway, REDIS_URL (events in Redis), HISTORY=off', warmUps.off);
          return [onRow, offRow, differenceRow(where, onRow, offRow, turns.on, turns.off, held)];
        } finally {
          await off.close();
        }
      } finally {
        await on.close();
      }
    }),
  );
}

export const s5: Scenario = {
  name: 'S5',
  title: 'sustained events',
  async run({ upstream, log }) {
    const limit = openFilesLimit();
    // Two gateways' subscribers are open at once in this process.
    if (!(limit >= fdsNeeded(2 * SUBSCRIBERS))) {
      return [{ scenario: 'S5', variant: `${RATE} webhooks/s → ${SUBSCRIBERS} subscribers`, value: '', p99: '', ratio: '', target: '', calls: '', errors: '', notes: '', voided: `ulimit -n ${limit} < ${fdsNeeded(2 * SUBSCRIBERS)} needed` }];
    }
    return withChild(startWebhookPacer(), async (pacer) => {
      const rows = await onOff(upstream.url, pacer, 'in process', () => ({}), log);
      if (WITH_REDIS && redisServerOnPath()) {
        rows.push(
          ...(await withChild(startRedis(), (redis) => onOff(upstream.url, pacer, 'Redis', (side) => ({ REDIS_URL: redis.redisUrl, REDIS_PREFIX: redis.newPrefix(`s5-${side}`) }), log))),
        );
      } else if (WITH_REDIS) {
        rows.push({ scenario: 'S5', variant: 'history on − off, Redis', value: '', p99: '', ratio: '', target: '', calls: '', errors: '', notes: '', voided: 'no redis-server on PATH' });
      }
      const raw = await withChild(startRawWs(), async (server) => {
        const side = await openSide('raw', server, true, SUBSCRIBERS, log);
        try {
          return sideRow(side, [await side.turn(pacer, RATE, RAW_SECONDS, 0)], 'raw ws broadcast (baseline)');
        } finally {
          await side.close();
        }
      });
      return [...rows, raw];
    });
  },
};
