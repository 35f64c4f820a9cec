import { redisServerOnPath } from '../../test/helpers/redis-server.js';
import { sleep, type Child } from '../lib/children.js';
import { fdsNeeded, openFilesLimit } from '../lib/delivery.js';
import { historyTotal } from '../lib/history-series.js';
import { redisKindsFrom, startRedisDeployment, type RedisDeployment } from '../lib/redis-deployments.js';
import { withChild, withChildren, type Scenario } from '../lib/scenario.js';
import { startLoadGenerator } from '../lib/load-generator.js';
import { startGateway, startRawWs } from '../lib/servers.js';
import { fmt, percentiles } from '../lib/stats.js';
import { CAP_MS, openSide, type Side, type TurnResult } from '../lib/sustained-turns.js';
import { row, verdict, type Row } from '../lib/table.js';

const RATE = Number(process.env.BENCH_S5_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_S5_SECONDS ?? 30);
const ROUNDS = Number(process.env.BENCH_S5_ROUNDS ?? 2);
const TURN_SECONDS = Math.max(1, Math.round(SECONDS / ROUNDS));
const RAW_SECONDS = Math.min(SECONDS, 10);
/** A turn per gateway before the measured ones, so neither is measured while V8 still compiles its webhook path. */
const WARMUP_SECONDS = Math.min(3, TURN_SECONDS);
const SUBSCRIBERS = Number(process.env.BENCH_S5_SUBSCRIBERS ?? 1_000);
/** Added to a webhook's answer p99 by the history, at most: the goal S5 judges. */
const HISTORY_BUDGET_MS = 1;

/** Answer times (ms) of every webhook of the turns; one never answered counts as infinitely slow, not absent. */
const answerTimes = (turns: TurnResult[]) => turns.flatMap((t) => t.answers.map((a) => (a.status === 0 ? Number.POSITIVE_INFINITY : a.ms)));

/** Errors of a turn's own webhooks (the side's own counters add the rest). */
const turnErrors = (t: TurnResult) => t.lost + t.late + t.duplicates + t.foreign + t.answers.filter((a) => a.status !== 200).length;

/** A side's row from its measured turns; errors in its warm-up turn void it too. */
function sideRow(side: Side, turns: TurnResult[], what: string, warmUp?: TurnResult): Row {
  const sum = (pick: (t: TurnResult) => number) => turns.reduce((n, t) => n + pick(t), 0);
  const [busySeconds, acceptedCount, reachedOthers] = [sum((t) => t.busySeconds), sum((t) => t.acceptedCount), sum((t) => t.reachedOthers)];
  const [lost, late, duplicates] = [sum((t) => t.lost), sum((t) => t.late), sum((t) => t.duplicates)];
  const answers = turns.flatMap((t) => t.answers);
  const [answerP50, answerP99] = percentiles(answerTimes(turns), [50, 99]);
  const answerText = (ms: number) => (Number.isFinite(ms) ? fmt(ms, 1) : `> ${fmt(busySeconds * 1_000)} (unanswered)`);
  // Millions of lags (a delivery each): read in place, not copied into one array.
  const [lagP50, lagP99, lagMax] = percentiles(
    (function* () {
      for (const t of turns) yield* t.lags;
    })(),
    [50, 99, 100],
  );
  const problems = {
    lost,
    'undelivered at the cap': late,
    dup: duplicates,
    'non-200': answers.filter((a) => a.status !== 0 && a.status !== 200).length,
    unanswered: answers.filter((a) => a.status === 0).length,
    'wrong msgs': side.wrong,
    'unknown ids': sum((t) => t.foreign) + side.strays,
    unprobed: side.unprobed,
    'conn failures': side.failures,
    'in the warm-up turn': warmUp ? turnErrors(warmUp) : 0,
  };
  const errors = Object.entries(problems).flatMap(([problem, count]) => (count ? [`${problem} ${count}`] : []));
  const timed = (f: (t: TurnResult) => number) => sum((t) => f(t) * t.busySeconds) / busySeconds;
  const turnsText = turns.length > 1 ? ` (${turns.length} turns of ${fmt(turns[0]!.seconds)} s)` : '';
  return row('S5', `${what}: ${RATE} webhooks/s × ${fmt(sum((t) => t.seconds))} s${turnsText} → ${fmt(side.subscribers)} subscribers`, {
    value:
      `delivered ${fmt(sum((t) => t.reachedAccepted))} of ${fmt(acceptedCount * side.subscribers)} ` +
      `(${fmt(acceptedCount)} webhooks answered 200 × ${fmt(side.subscribers)}); ` +
      `lost ${fmt(lost)}, dup ${fmt(duplicates)}${late ? `, still arriving at the cap ${fmt(late)}` : ''}; ` +
      `${fmt(sum((t) => t.delivered) / sum((t) => t.deliverySeconds))} deliveries/s; answer p50 ${answerText(answerP50!)} ms`,
    p99: answerText(answerP99!),
    target: side.raw ? '' : `0 lost, 0 dup, answer p99 ≤ 50 ms ${verdict(errors.length === 0 && answerP99! <= 50)}`,
    errors: errors.join(', ') || '0',
    notes: [
      `delivery lag p50 ${fmt(lagP50!)} / p99 ${fmt(lagP99!)} / max ${fmt(lagMax!)} ms`,
      `offered ${fmt(RATE * side.subscribers)} deliveries/s; webhooks posted and timed by a separate pacer process`,
      reachedOthers > 0 && `${fmt(reachedOthers)} deliveries of webhooks not answered 200`,
      turns.every((t) => t.drained)
        ? `all delivered ${turns.map((t) => fmt(t.deliverySeconds, 1)).join(' / ')} s after each turn's first POST`
        : turns.some((t) => t.stillArriving)
          ? `wait capped ${CAP_MS / 1_000} s after the sending while deliveries still arrived`
          : 'deliveries stopped before all arrived',
      `server CPU ${fmt(
        timed((t) => t.cores),
        2,
      )} cores; receiver ELU ${fmt(timed((t) => t.receiverElu) * 100)}%` +
        `${turns.some((t) => t.receiverElu > 0.95) ? ' (saturated)' : ''}`,
    ],
    voided: errors.length > 0 ? 'lost, duplicated, rejected, unanswered or undelivered events' : undefined,
  });
}

/** What `a` adds to a webhook's answer over `b` (on − off, or one Redis deployment over another), pooled and round by round. */
function differenceRow(variant: string, a: Measured, b: Measured, judged: boolean, notes: string, why?: string): Row {
  const q = (turns: TurnResult[], p: number) => percentiles(answerTimes(turns), [p * 100])[0]!;
  const signed = (ms: number) => `${ms >= 0 ? '+' : '−'}${fmt(Math.abs(ms), 2)}`;
  const [p50A, p50B, p99A, p99B] = [q(a.turns, 0.5), q(b.turns, 0.5), q(a.turns, 0.99), q(b.turns, 0.99)];
  const delta = p99A - p99B;
  const byRound = a.turns.map((t, r) => q([t], 0.99) - q([b.turns[r]!], 0.99));
  // Rounds that disagree by more than the budget say the machine's noise, not the history, decides the verdict.
  const spread = Math.max(...byRound) - Math.min(...byRound);
  const noisy = spread > HISTORY_BUDGET_MS ? ` (the rounds differ by ${fmt(spread, 2)} ms: noise of that size)` : '';
  const voided = a.row.voided || b.row.voided ? 'a side had errors' : why;
  const rounds = judged
    ? `p99 on − off by round: ${byRound.map(signed).join(', ')} ms`
    : `p50 / p99 difference by round: ${a.turns.map((t, r) => `${signed(q([t], 0.5) - q([b.turns[r]!], 0.5))} / ${signed(byRound[r]!)}`).join(', ')} ms`;
  return row('S5', `${variant}: webhook answer time`, {
    value: `p50 ${fmt(p50A, 2)} − ${fmt(p50B, 2)} = ${signed(p50A - p50B)} ms; p99 ${fmt(p99A, 2)} − ${fmt(p99B, 2)} = ${signed(delta)} ms`,
    p99: signed(delta),
    target: judged
      ? `p99 on − off ≤ ${HISTORY_BUDGET_MS} ms ${voided ? 'VOID' : `${verdict(delta <= HISTORY_BUDGET_MS)}${noisy}`}`
      : 'for reading (no goal)',
    errors: voided ? '' : '0',
    notes: `${rounds}; ${notes}`,
    voided,
  });
}

/** History on − off: its row, VOID when the history-on gateway's history held nothing after the turns. */
function historyRow(where: string, on: Measured, off: Measured): Row {
  const held = typeof on.held === 'number' ? fmt(on.held) : on.held;
  const notes =
    `answer times as the pacer process measures them (POST sent → answer read), ` +
    `after a ${WARMUP_SECONDS} s warm-up turn each (not counted); the history held ${held} transactions after the turns`;
  const empty =
    `the history-on gateway's history holds ${typeof on.held === 'number' ? held : `nothing readable (${held})`}` +
    `${where === 'Redis' ? ' with REDIS_URL' : ''}`;
  return differenceRow(`history on − off, ${where}`, on, off, true, notes, typeof on.held === 'number' && on.held > 0 ? undefined : empty);
}

/** A gateway to measure: its row's label, the variables it starts with and the Redis deployment it writes to. */
type Contender = { label: string; env: Record<string, string>; redis?: RedisDeployment };
type Measured = Awaited<ReturnType<typeof inTurns>>[number] & { row: Row };

/** Every contender's gateway and subscribers, a warm-up turn each, then ROUNDS rounds of a turn each, the order flipping. */
async function inTurns(upstreamUrl: string, pacer: Child, contenders: Contender[], log: (m: string) => void) {
  return withChildren(
    contenders.map((contender) => () => startGateway(upstreamUrl, {}, contender.env)),
    (servers) =>
      withChildren(
        servers.map((server, index) => () => openSide(contenders[index]!.label, server, false, SUBSCRIBERS, log)),
        async (sides) => {
          // redisCpu: its Redis's CPU seconds over the measured turns, by server.
          const measured = [];
          for (const [index, side] of sides.entries()) {
            const warmUp = await side.turn(pacer, RATE, WARMUP_SECONDS, 1_000 + index);
            measured.push({ contender: contenders[index]!, side, warmUp, turns: [] as TurnResult[], redisCpu: [] as number[] });
          }
          for (let round = 0; round < ROUNDS; round += 1) {
            for (const m of round % 2 === 0 ? measured : [...measured].reverse()) {
              const before = await m.contender.redis?.serverCpuSeconds();
              m.turns.push(await m.side.turn(pacer, RATE, TURN_SECONDS, round * measured.length + measured.indexOf(m)));
              const after = await m.contender.redis?.serverCpuSeconds();
              if (before && after) m.redisCpu = after.map((seconds, node) => (m.redisCpu[node] ?? 0) + seconds - before[node]!);
              await sleep(500);
            }
          }
          // held: what its history holds after the turns.
          return Promise.all(measured.map(async (m, index) => ({ ...m, held: await historyTotal(servers[index]!.url) })));
        },
      ),
  );
}

/** The contenders measured in turns, each with its row; with Redis, the notes say what its Redis spent per webhook. */
async function measuredRows(...args: Parameters<typeof inTurns>): Promise<Measured[]> {
  return (await inTurns(...args)).map((m) => {
    const row = sideRow(m.side, m.turns, m.contender.label, m.warmUp);
    if (m.redisCpu.length === 0) return { ...m, row };
    const webhooks = m.turns.reduce((n, t) => n + t.answers.length, 0);
    const perWebhook = (seconds: number) => `${fmt((seconds * 1_000) / webhooks, 3)} ms`;
    const servers =
      m.redisCpu.length > 1 ? ` over its ${m.redisCpu.length} servers, the busiest ${perWebhook(Math.max(...m.redisCpu))}` : '';
    const redis = `Redis CPU ${perWebhook(m.redisCpu.reduce((a, b) => a + b, 0))} per webhook${servers}`;
    return { ...m, row: { ...row, notes: `${row.notes}; ${redis} (INFO, over the turns)` } };
  });
}

const REDIS_LABELS = {
  single: 'gateway, REDIS_URL (events in Redis, history in process fed from their log), history on',
  replica: 'gateway, REDIS_URL to a master with a replica (each webhook WAITs for it), history on',
  cluster: 'gateway, REDIS_CLUSTER_NODES (a cluster of 3 masters with a replica each), history on',
} as const;

/** History on and off against one Redis, beside gateways on a Redis with a replica and on a Redis Cluster, all in the same turns. */
async function redisTurns(upstreamUrl: string, pacer: Child, deployments: RedisDeployment[], log: (m: string) => void): Promise<Row[]> {
  const contenders: Contender[] = deployments.flatMap((redis) => [
    { label: REDIS_LABELS[redis.kind], env: redis.env(`s5-${redis.kind}`), redis },
    ...(redis.kind === 'single'
      ? [{ label: 'gateway, REDIS_URL (events in Redis), HISTORY=off', env: { ...redis.env('s5-off'), HISTORY: 'off' }, redis }]
      : []),
  ]);
  const voided = tooFewFiles(contenders.length);
  if (voided) return [row('S5', `Redis: ${deployments.map((d) => d.kind).join(', ')}`, { voided })];
  const measured = await measuredRows(upstreamUrl, pacer, contenders, log);
  // The single Redis's pair, when it ran, comes first (deployments keep the order of REDIS_KINDS).
  const [on, off] = deployments[0]?.kind === 'single' ? measured : [];
  const rows = on && off ? [on.row, off.row, historyRow('Redis', on, off)] : [];
  for (const m of measured.filter((m) => m.contender.redis?.kind !== 'single')) {
    const what = m.contender.redis!.kind === 'replica' ? 'a Redis with a replica − one Redis' : 'a Redis Cluster − one Redis';
    const notes = 'both history on, in the same turns, at the same offered load';
    rows.push(m.row, ...(on ? [differenceRow(what, m, on, false, notes)] : []));
  }
  return rows;
}

/** Why `gateways` gateways' subscribers cannot all be open at once in this process, if they cannot. */
const tooFewFiles = (gateways: number) =>
  openFilesLimit() >= fdsNeeded(gateways * SUBSCRIBERS)
    ? undefined
    : `ulimit -n ${openFilesLimit()} < ${fdsNeeded(gateways * SUBSCRIBERS)} needed`;

export const s5: Scenario = {
  name: 'S5',
  title: 'sustained events',
  async run({ upstream, log }) {
    // Read here, not when the module loads: a wrong value stops S5, not a run that does not include it.
    const redisKinds = redisKindsFrom(process.env.BENCH_S5_REDIS);
    // Two gateways' subscribers are open at once in this process.
    const voided = tooFewFiles(2);
    if (voided) return [row('S5', `${RATE} webhooks/s → ${SUBSCRIBERS} subscribers`, { voided })];
    return withChild(startLoadGenerator(), async (pacer) => {
      const inProcess: Contender[] = [
        { label: 'gateway, defaults (history on, in process)', env: {} },
        { label: 'gateway, HISTORY=off', env: { HISTORY: 'off' } },
      ];
      const [on, off] = await measuredRows(upstream.url, pacer, inProcess, log);
      const rows = [on!.row, off!.row, historyRow('in process', on!, off!)];
      if (redisKinds.length > 0 && redisServerOnPath()) {
        rows.push(
          ...(await withChildren(
            redisKinds.map((kind) => () => startRedisDeployment(kind)),
            (deployments) => redisTurns(upstream.url, pacer, deployments, log),
          )),
        );
      } else if (redisKinds.length > 0) {
        rows.push(row('S5', 'history on − off, Redis', { voided: 'no redis-server on PATH' }));
      }
      const raw = await withChild(startRawWs(), (server) =>
        withChild(openSide('raw', server, true, SUBSCRIBERS, log), async (side) =>
          sideRow(side, [await side.turn(pacer, RATE, RAW_SECONDS, 0)], 'raw ws broadcast (baseline)'),
        ),
      );
      return [...rows, raw];
    });
  },
};
