import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { parseWebhookText, type TransactionUpdateEvent } from '../../src/events/normalize.js';
import { createPostgresHistory } from '../../src/postgres/postgres-history.js';
import { cpuSecondsBetween, cpuSecondsOfPids, cpuSecondsOfProcesses, sleep, type Child } from '../lib/children.js';
import {
  historySeries,
  historyTotal,
  PAGE,
  postEvents,
  RECENT_PENDING_QUERY,
  RECENT_QUERY,
  SERIES_PRODUCTS,
  STATS_QUERY,
  type HistorySeries,
  type SeriesEvent,
} from '../lib/history-series.js';
import { BodyCheck } from '../lib/expect.js';
import { APOLLO_CLIENT_ACCEPT, graphqlTarget, measureHttp } from '../lib/http-load.js';
import { withChildren, type Scenario, type ScenarioContext } from '../lib/scenario.js';
import { askGateway, CLIENT_KEY, memoryAfterGc, metric, startGateway } from '../lib/servers.js';
import { fmt } from '../lib/stats.js';
import { row, httpRow, verdict, type Row } from '../lib/table.js';

/** The same for both stores: a history shared by instances reads as fast as each instance's own (at 300 000 and more in PostgreSQL). */
const GOAL = 2_000;
type Where = 'in process' | 'PostgreSQL';
const sizesOf = (list: string | undefined) =>
  (list ?? '10000,50000')
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
const SIZES: Record<Where, number[]> = {
  'in process': sizesOf(process.env.BENCH_S10_SIZES),
  PostgreSQL: sizesOf(process.env.BENCH_S10_POSTGRES_SIZES),
};
const largest = (where: Where) => SIZES[where].at(-1)!;

/** One memory figure of both sides at 0 and after each size. */
type Growth = Record<'on' | 'off', number[]>;

/** The measured gateways hold the whole series (the default bound is 100 000), with room for it in their heap past 300 000. */
const historyEnv = (where: Where): Record<string, string> => ({
  HISTORY_MAX_TRANSACTIONS: String(Math.max(largest(where), 100_000)),
  ...(where === 'in process' && largest(where) > 300_000
    ? { NODE_OPTIONS: `--max-old-space-size=${Math.ceil(largest(where) / 1_000_000) * 4_096}` }
    : {}),
});

const pointsOf = (where: Where) => [0, ...SIZES[where]];
const perTransaction = (where: Where, g: Growth, from: number, to: number) =>
  (g.on[to]! - g.on[from]! - (g.off[to]! - g.off[from]!)) / (pointsOf(where)[to]! - pointsOf(where)[from]!);
const mb = (bytes: number) => `${bytes >= 0 ? '+' : ''}${fmt(bytes / 2 ** 20, 1)} MB`;

/** The marginal figure: between the two largest sizes, or from 0 when one size is given. */
const marginal = (where: Where, g: Growth) => perTransaction(where, g, SIZES[where].length - 1, SIZES[where].length);
const grown = ([first, ...after]: number[]) => after.map((v) => mb(v - first!)).join(' / ');
const stepsText = (where: Where, what: string, g: Growth, withOff = true) => {
  const steps = SIZES[where].map((to, k) => `${fmt(pointsOf(where)[k]!)} → ${fmt(to)}: ${fmt(perTransaction(where, g, k, k + 1))} B`);
  return `${what} per transaction ${steps.join(', ')} (history on ${grown(g.on)}${withOff ? `, off ${grown(g.off)}` : ''})`;
};

/** Why a store's rows cannot stand when its history does not hold the whole series. */
const notHeld = (where: Where, held: number | string) =>
  `${where}: the history holds ${typeof held === 'number' ? fmt(held) : `nothing readable (${held})`} ` +
  `of the ${fmt(largest(where))} transactions posted`;

/** Transactions of each step whose webhooks are measured: the last ones before the size. */
const SAMPLE = 20_000;
/** Transactions whose webhooks warm up the HISTORY=off gateway before its first measured step. */
const WARM_UP = 5_000;
const FILL_CHUNK = 50_000;

/** The gateway's CPU per webhook over the step (/proc, what it applied after answering included) and the store's (0 in process), µs. */
async function fillStep(gateway: Child, events: SeriesEvent[], settle?: () => Promise<void>, storeCpu?: () => Map<number, number>) {
  const cpu = gateway.cpuSeconds();
  const store = storeCpu?.();
  const result = await postEvents(gateway.url, events);
  await settle?.();
  const storeSeconds = store && storeCpu ? cpuSecondsBetween(store, storeCpu()) : 0;
  return { ...result, gatewayUs: ((gateway.cpuSeconds() - cpu) / result.webhooks) * 1e6, storeUs: (storeSeconds / result.webhooks) * 1e6 };
}

/** Once the history holds `size`, or its count has not moved for 10 s. */
async function settled(gatewayUrl: string, size: number): Promise<void> {
  for (let last: number | string = -1, still = Date.now(); ; await sleep(200)) {
    const held = await historyTotal(gatewayUrl);
    if (held === size || (held === last && Date.now() - still > 10_000)) return;
    if (held !== last) [last, still] = [held, Date.now()];
  }
}

type FillStep = Awaited<ReturnType<typeof fillStep>>;
type Fills = Record<'on' | 'off', FillStep[]>;
const total = (list: FillStep[], key: 'webhooks' | 'seconds' | 'failed' | 'retried') => list.reduce((n, f) => n + f[key], 0);
/** One figure of a side's steps, "a / b / c". */
const steps = (list: FillStep[], pick: (f: FillStep) => number, digits = 1) => list.map((f) => fmt(pick(f), digits)).join(' / ');
/** A side's rate and answer p50 by step: a closed loop's, for reading. */
const paceText = (list: FillStep[]) =>
  `${fmt(total(list, 'webhooks') / total(list, 'seconds'))} webhooks/s, answer p50 ${steps(list, (f) => f.p50)} ms`;

function fillRow(where: Where, fills: Fills, held: number | string): Row {
  const failed = total(fills.on, 'failed') + total(fills.off, 'failed');
  const retried = total(fills.on, 'retried');
  const postgres = where === 'PostgreSQL';
  const costs = fills.on.map((f, k) => f.gatewayUs - fills.off[k]!.gatewayUs + f.storeUs);
  const spread = Math.max(...costs) / Math.min(...costs) - 1;
  const variant =
    `applying an event, ${where}: the last ${fmt(SAMPLE)} transactions ` +
    `before each of ${SIZES[where].map((s) => fmt(s)).join(' / ')} ` +
    `(${fmt(total(fills.on, 'webhooks'))} webhooks; 3 products each; pending, completed, failed), 32 in flight, to history on and to HISTORY=off`;
  return row('S10', variant, {
    value:
      `the history costs ${costs.map((c) => fmt(c)).join(' / ')} µs of CPU per webhook` +
      `${postgres ? " (the gateway's on − off plus PostgreSQL's)" : ' (gateway on − off)'}; ${paceText(fills.on)}`,
    p99: steps(fills.on, (f) => f.p99),
    target: costs.some((c) => c <= 0)
      ? 'the same at every size, within 25%: not judged ' +
        '(a cost at or below zero: the noise between the two gateways is larger than the cost)'
      : `the same at every size, within 25%: ${spread <= 0.25 ? 'met' : 'not met'} (largest ${fmt(spread * 100, 0)}% over smallest)`,
    errors: failed === 0 ? '0' : `${failed} webhooks not answered 200`,
    notes: [
      `gateway CPU per webhook, history on ${steps(fills.on, (f) => f.gatewayUs, 0)} µs, off ${steps(fills.off, (f) => f.gatewayUs, 0)} µs`,
      postgres
        ? `PostgreSQL's CPU per webhook ${steps(fills.on, (f) => f.storeUs, 0)} µs (its processes in /proc; ` +
          `the gateway applies what waits in batches just after the answers, and the step ends once the history holds them); ` +
          `the transactions before the measured ones were applied beside the gateway, by the same store code, in batches`
        : 'the transactions before the measured ones were posted to history on only',
      retried > 0 &&
        `${fmt(retried)} answers 503 (the history's feed held its bound) that the senders came back after, as a sender retries`,
      `HISTORY=off: ${paceText(fills.off)}, p99 ${steps(fills.off, (f) => f.p99)} ms`,
      `answer times of a closed loop of 32 senders, for reading (not S5's paced rate); ` +
        `the history then holds ${typeof held === 'number' ? fmt(held) : held}`,
    ],
    voided: failed > 0 ? 'webhooks failed' : held === largest(where) ? undefined : notHeld(where, held),
  });
}

/** CPU seconds of the store's own processes, by pid. */
type StoreCpu = () => Promise<Map<number, number>>;
const readVariant = (where: Where, pendingOnly: boolean) =>
  `recentTransactions(first: ${PAGE}${pendingOnly ? ', status: ["pending"]' : ''}) ` +
  `{ nodes { transactionId status total lastUpdated products { productId quantity } } }, ${where}, ${fmt(largest(where))} held`;

async function reads(ctx: ScenarioContext, gateway: Child, where: Where, pendingOnly: boolean, series: HistorySeries, storeCpu?: StoreCpu) {
  const cases = [{ query: pendingOnly ? RECENT_PENDING_QUERY : RECENT_QUERY, check: series.recentCheck(largest(where), pendingOnly) }];
  const target = graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, cases, APOLLO_CLIENT_ACCEPT);
  let before: Map<number, number> | undefined;
  const m = await measureHttp(target, { server: gateway }, async () => void (before = await storeCpu?.()));
  // The closed loop's only: what the store's processes used over its runs, per request.
  const storeUs = before && storeCpu && (cpuSecondsBetween(before, await storeCpu()) / m.runs.reduce((n, r) => n + r.requests, 0)) * 1e6;
  const alone = await measureHttp({ ...target, connections: 1 }, { server: gateway });
  ctx.log(`${where}${pendingOnly ? ', status filter' : ''}: ${fmt(m.rps.median)} req/s; one at a time p99 ${fmt(alone.p99, 1)} ms`);
  const errors = m.errors.total + alone.errors.total > 0;
  return httpRow('S10', readVariant(where, pendingOnly), m, {
    target:
      `one at a time p99 ≤ 20 ms ${errors ? 'VOID (errors)' : verdict(alone.p99 <= 20)}; ` +
      `≥ ${fmt(GOAL)} req/s ${errors ? '' : verdict(m.rps.median >= GOAL)}`,
    notes: [
      `one at a time: p99 ${fmt(alone.p99, 1)} ms, ${fmt(alone.rps.median)} req/s`,
      ...m.notes,
      storeUs !== undefined && `PostgreSQL's CPU ${fmt(storeUs)} µs/request (the gateway's connections' backends, /proc)`,
    ],
  });
}

const HOUR = 3_600_000;
const WEEK = 7 * 24 * HOUR;
const statsVariant = (where: Where) =>
  `transactionStats(since: a week ago, interval: HOUR) with every interval's statuses ` +
  `and the top 10 products by quantity and by amount (${fmt(SERIES_PRODUCTS)} distinct products), ` +
  `${where}, ${fmt(largest(where))} held`;

async function statsReads(ctx: ScenarioContext, gateway: Child, where: Where, series: HistorySeries): Promise<Row> {
  const until = Math.ceil(Date.now() / HOUR) * HOUR;
  const variables = { since: new Date(until - WEEK).toISOString(), until: new Date(until).toISOString() };
  const first = JSON.parse((await askGateway(gateway.url, STATS_QUERY, variables)).text) as {
    data?: { transactionStats: { count: number; intervals: unknown[]; topProductsByQuantity: unknown[]; topProductsByAmount: unknown[] } };
  };
  const stats = first.data?.transactionStats;
  const expected = series.countBetween(largest(where), until - WEEK, until);
  const shape = [stats?.count, stats?.intervals.length, stats?.topProductsByQuantity.length, stats?.topProductsByAmount.length];
  if (shape.join() !== [expected, 168, 10, 10].join()) {
    return notMeasured(
      statsVariant(where),
      `the first answer is not the series' week (count ${stats?.count ?? 'none'}, expected ${expected}): ` +
        `${JSON.stringify(first).slice(0, 200)}`,
    );
  }
  // One at a time, as dashboards refreshing now and then ask: the p99 is a read's own time, not a queue's.
  const cases = [{ query: STATS_QUERY, variables, check: new BodyCheck(first) }];
  const target = { ...graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, cases, APOLLO_CLIENT_ACCEPT), connections: 1 };
  // The gateway's longest event-loop delay since the last scrape: scraped after the warm-up, read after the runs.
  const m = await measureHttp(target, { server: gateway }, () => metric(gateway, 'nodejs_eventloop_lag_max_seconds'));
  const loopMaxMs = (await metric(gateway, 'nodejs_eventloop_lag_max_seconds')) * 1_000;
  ctx.log(`${where}, week by hour: ${fmt(m.rps.median)} req/s, p99 ${fmt(m.p99, 1)} ms, event loop max delay ${fmt(loopMaxMs, 1)} ms`);
  const met = m.p99 <= 50 && loopMaxMs <= 20;
  return httpRow('S10', statsVariant(where), m, {
    target: `p99 ≤ 50 ms and the event loop never blocked > 20 ms ${m.errors.total > 0 ? 'VOID (errors)' : verdict(met)}`,
    notes: [...m.notes, `event loop max delay during the reads ${fmt(loopMaxMs, 1)} ms`, `the week holds ${fmt(expected)} transactions`],
  });
}

const notMeasured = (variant: string, why: string): Row => row('S10', variant, { voided: why });

/** One store's rows: the fill, the memory per stored transaction, then the reads; `database`: PostgreSQL's, made for this run. */
async function storeRows(ctx: ScenarioContext, series: HistorySeries, database?: { name: string; url: string }): Promise<Row[]> {
  const where: Where = database ? 'PostgreSQL' : 'in process';
  const env = historyEnv(where);
  const starts = [
    () => startGateway(ctx.upstream.url, {}, { ...(database ? { DATABASE_URL: database.url } : {}), ...env }),
    () => startGateway(ctx.upstream.url, {}, { HISTORY: 'off', ...env }),
  ];
  return withChildren(starts, async ([on, off]) => {
    // The HISTORY=off gateway keeps nothing in the database: its side stays 0 there.
    const figures = (database ? ['tables and indexes'] : ['heap', 'RSS']).map((what): [string, Growth] => [what, { on: [], off: [] }]);
    const snapshot = async () => {
      if (database) await asAdmin((client) => client.query('VACUUM ANALYZE'), database.url);
      const [a, b] = database
        ? [[await historyBytes(database.url)], [0]]
        : [await memoryAfterGc(on!), await memoryAfterGc(off!)].map((r) => [r.heap, r.rss]);
      figures.forEach(([, g], k) => {
        g.on.push(a![k]!);
        g.off.push(b![k]!);
      });
    };
    // In PostgreSQL: the transactions before the measured ones applied beside the gateway, a step ended once the history holds it.
    const beside = database && besideTheGateway(database.url);
    const settle = async (size: number) => void (beside && (await settled(on!.url, size)));
    const postgresCpu = beside ? () => cpuSecondsOfProcesses('postgres') : undefined;
    const fills: Fills = { on: [], off: [] };
    await snapshot();
    let from = 0;
    for (const size of SIZES[where]) {
      // At most half of the size: the first half of the first step warms both gateways up.
      const measuredFrom = Math.max(from, size - Math.min(SAMPLE, size / 2));
      if (measuredFrom > from) {
        // The HISTORY=off gateway warms up on the fill's first events, as history on does on the whole fill: else its
        // first measured step would be a cold start's, and on − off the difference between a cold and a warm gateway.
        if (from === 0) await postEvents(off!.url, series.events(0, Math.min(measuredFrom, WARM_UP)));
        ctx.log(`${where}: filling to ${fmt(measuredFrom)} transactions${beside ? ', beside the gateway' : ', history on only'}`);
        // In chunks: millions of events at once would not fit this process's heap.
        for (let at = from; at < measuredFrom; at += FILL_CHUNK) {
          const filling = series.events(at, Math.min(at + FILL_CHUNK, measuredFrom));
          await (beside ? beside.fill(filling) : postEvents(on!.url, filling));
        }
        await settle(measuredFrom);
      }
      const events = series.events(measuredFrom, size);
      ctx.log(`${where}: to ${fmt(size)} transactions, ${fmt(events.length)} webhooks measured on history on, then off`);
      fills.on.push(await fillStep(on!, events, () => settle(size), postgresCpu));
      fills.off.push(await fillStep(off!, events));
      await snapshot();
      from = size;
    }
    await beside?.close();
    const held = await historyTotal(on!.url);
    const what = database
      ? "the history's tables and indexes (pg_total_relation_size, after VACUUM ANALYZE)"
      : 'V8 heap used and RSS after forced GCs, net of a HISTORY=off gateway given the same webhooks';
    const value = figures.map(([name, g]) => `${database ? '' : `${name} `}${fmt(marginal(where, g))} B`).join(', ');
    const memory = row('S10', `memory per stored transaction, ${where}: ${what}`, {
      value: `${value} per transaction (${fmt(pointsOf(where).at(-2)!)} → ${fmt(largest(where))})`,
      target: 'measured and stated',
      errors: '0',
      notes: [
        ...figures.map(([name, g]) => stepsText(where, name, g, !database)),
        !!database && `at the end ${fmt(figures[0]![1].on.at(-1)! / 2 ** 20, 1)} MB`,
        `one transaction a second of event time: the per-minute ${database ? 'sums' : 'statistics'} grow with it`,
      ],
      voided: held === largest(where) ? undefined : notHeld(where, held),
    });
    if (held !== largest(where)) {
      const unread = [readVariant(where, false), readVariant(where, true), statsVariant(where)];
      return [fillRow(where, fills, held), memory, ...unread.map((v) => notMeasured(v, notHeld(where, held)))];
    }
    const storeCpu = database && (() => backendsCpu(database.name));
    return [
      fillRow(where, fills, held),
      memory,
      await reads(ctx, on!, where, false, series, storeCpu),
      await reads(ctx, on!, where, true, series, storeCpu),
      await statsReads(ctx, on!, where, series),
    ];
  });
}

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function asAdmin<T>(work: (client: pg.Client) => Promise<T>, url = ADMIN_URL): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The history's tables with their indexes and TOAST, in bytes (0 before the gateway's migrations made them). */
const historyBytes = (url: string) =>
  asAdmin(async (client) => {
    const { rows } = await client.query<{ bytes: string | null }>(
      `SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace ` +
        `WHERE c.relkind = 'r' AND n.nspname = 'public' AND c.relname LIKE 'history\\_%'`,
    );
    return Number(rows[0]?.bytes ?? 0);
  }, url);

async function backendsCpu(database: string): Promise<Map<number, number>> {
  const { rows } = await asAdmin((client) =>
    client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]),
  );
  return cpuSecondsOfPids(rows.map(({ pid }) => pid));
}

/** Events applied in one database transaction by the fill beside the gateway. */
const FILL_BATCH = 500;

function besideTheGateway(databaseUrl: string) {
  // Pipelined, as the gateway's pool is (src/postgres/postgres-database.ts): the store gives a connection statements together.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2, pipeline: true });
  const store = createPostgresHistory(pool, { retentionMs: WEEK, defaultCurrency: 'EUR', soldStatuses: [], sweepEveryMs: 24 * HOUR });
  const toEvent = ({ id, transaction, at }: SeriesEvent): TransactionUpdateEvent => {
    const request = buildWebhookRequest({ form: 'enveloped', id, transaction, at });
    const result = parseWebhookText(request.body, { receivedAt: new Date().toISOString(), madeId: id });
    if (!result.ok) throw new Error(`a series event the gateway would refuse: ${result.problems.join('; ')}`);
    return result.event;
  };
  return {
    async fill(events: SeriesEvent[]) {
      for (let k = 0; k < events.length; k += FILL_BATCH) await store.applyAll(events.slice(k, k + FILL_BATCH).map(toEvent));
    },
    async close() {
      store.close();
      await pool.end();
    },
  };
}

async function inPostgres(ctx: ScenarioContext, series: HistorySeries): Promise<Row[]> {
  const name = `vg_bench_${randomBytes(6).toString('hex')}`;
  try {
    await asAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  } catch (error) {
    return [notMeasured('PostgreSQL rows', `no database could be made at ${ADMIN_URL}: ${(error as Error).message}`)];
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  try {
    return await storeRows(ctx, series, { name, url: url.toString() });
  } finally {
    await asAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

export const s10: Scenario = {
  name: 'S10',
  title: 'transaction history',
  async run(ctx) {
    // Each store its series: the newest event dated now (to the second), the oldest as many seconds before as it holds.
    const seriesOf = (where: Where) => historySeries(largest(where), Math.floor(Date.now() / 1_000) * 1_000, randomUUID().slice(0, 8));
    return [...(await storeRows(ctx, seriesOf('in process'))), ...(await inPostgres(ctx, seriesOf('PostgreSQL')))];
  },
};
