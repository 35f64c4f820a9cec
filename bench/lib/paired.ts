import type { Build } from './baseline.js';
import { SETTINGS, type HttpSession, type Measurement, type RunFigures } from './http-load.js';
import { fmt, median } from './stats.js';
import { httpRow, times, type Comparison, type Row } from './table.js';

/** "No more than 10% slower": after keeps ≥ 90% of before's req/s, and spends ≤ 1/0.9 of its CPU per request. */
export const SLOWER_LIMIT = 0.9;

export interface Paired {
  before: Measurement;
  after: Measurement;
  /** after ÷ before of the median req/s. */
  rps: number;
  /** after ÷ before of the median server CPU per request. */
  cpu: number;
  /** after ÷ before req/s of each adjacent pair of runs. */
  pairs: number[];
}

export async function runInTurns(sessions: HttpSession[], rounds = SETTINGS.pairedRuns): Promise<RunFigures[][]> {
  const figures: RunFigures[][] = [];
  for (let round = 0; round < rounds; round += 1) {
    const order = sessions.map((_, i) => (round % 2 === 0 ? i : sessions.length - 1 - i));
    const byRound: RunFigures[] = new Array(sessions.length);
    for (const i of order) byRound[i] = await sessions[i]!.run();
    figures.push(byRound);
  }
  return figures;
}

/** A before/after pair from both builds' figures and the after ÷ before req/s of each round. */
export const pairedOf = (before: Measurement, after: Measurement, pairs: number[]): Paired => ({
  before,
  after,
  rps: after.rps.median / before.rps.median,
  cpu: after.cpuPerRequestUs / before.cpuPerRequestUs,
  pairs,
});

/** Both builds' sessions warmed up, then run in turns: before-after, after-before, … */
export async function measurePaired(b: HttpSession, a: HttpSession): Promise<Paired> {
  await b.warmUp();
  await a.warmUp();
  const rounds = await runInTurns([b, a]);
  return pairedOf(
    b.result(),
    a.result(),
    rounds.map(([fb, fa]) => fa!.rps / fb!.rps),
  );
}

const clean = (p: Paired) => p.before.errors.total === 0 && p.after.errors.total === 0;

/** Whether after is within the limit, in words. */
export function slowerVerdict(p: Paired): string {
  if (!clean(p)) return 'VOID (errors)';
  const rpsOk = p.rps >= SLOWER_LIMIT;
  const cpuOk = p.cpu <= 1 / SLOWER_LIMIT;
  if (rpsOk && cpuOk) return 'PASS';
  const failures = [!rpsOk && `req/s ${fmt((1 - p.rps) * 100)}% lower`, !cpuOk && `CPU/request ${fmt((p.cpu - 1) * 100)}% higher`];
  return `FAIL (${failures.filter(Boolean).join(', ')})`;
}

export const pairedRatioText = (p: Paired): string =>
  `after/before: req/s ${times(p.rps)} [pairs ${fmt(Math.min(...p.pairs), 2)}–${fmt(Math.max(...p.pairs), 2)}], ` +
  `CPU/request ${times(p.cpu)}`;

/** The two rows of a paired measurement: before (the baseline) then after. `extra` fills each row's other cells. */
export function pairedRows(
  scenario: string,
  what: string,
  p: Paired,
  baseline: Build,
  extra: { before?: Partial<Row>; after?: Partial<Row> } = {},
): Row[] {
  const runs = `${SETTINGS.pairedRuns} runs in turns with the other build`;
  const rowOf = (label: string, m: Measurement, more: Partial<Row> | undefined) => {
    const row = httpRow(scenario, `${what} — ${label}`, m, more);
    return { ...row, notes: `${row.notes}; ${runs}` };
  };
  return [
    rowOf(baseline.label, p.before, extra.before),
    rowOf('after', p.after, {
      ...extra.after,
      ratio: [extra.after?.ratio, pairedRatioText(p)].filter(Boolean).join('; '),
      target: [extra.after?.target, `after ≥ ${SLOWER_LIMIT}× before ${slowerVerdict(p)}`].filter(Boolean).join('; '),
    }),
  ];
}

/** The summary line of a paired measurement. */
export function pairedComparison(scenario: string, what: string, p: Paired): Comparison {
  const side = (m: Measurement) => `${fmt(m.rps.median)} req/s, ${fmt(m.cpuPerRequestUs)} µs/request`;
  return {
    scenario,
    what,
    before: side(p.before),
    after: side(p.after),
    ratio:
      `req/s ${times(p.rps)} (pairs ${fmt(Math.min(...p.pairs), 2)}–${fmt(Math.max(...p.pairs), 2)}, ` +
      `median ${fmt(median(p.pairs), 2)}); CPU/request ${times(p.cpu)}`,
    verdict: slowerVerdict(p),
  };
}

/** Above this event-loop utilisation of the parent, the load generator, not the server, set the pace. */
const LOADGEN_SATURATED = 0.95;

export interface AgainstHop {
  /** Subject req/s ÷ the hop's in the same round: median and range over the rounds. */
  rps: { median: number; min: number; max: number };
  /** Subject server CPU per answer ÷ the hop's in the same round, median over the rounds. */
  cpu: number;
  /** Errors of the hop during these rounds: any voids the ratios. */
  hopErrors: number;
  /** Whether the load generator was saturated in a run of the subject (ratio a lower bound) or of the hop (an upper bound). */
  saturated: { subject: boolean; hop: boolean };
}

const cpuPerAnswer = (f: RunFigures) => (f.serverCores ?? Number.NaN) / f.rps;

/** Ratios of the session at `side` to the hop at index 0, round by round. */
export function againstHop(rounds: RunFigures[][], side: number, hopErrors: number): AgainstHop {
  const rps = rounds.map((r) => r[side]!.rps / r[0]!.rps);
  return {
    rps: { median: median(rps), min: Math.min(...rps), max: Math.max(...rps) },
    cpu: median(rounds.map((r) => cpuPerAnswer(r[side]!) / cpuPerAnswer(r[0]!))),
    hopErrors,
    saturated: {
      subject: rounds.some((r) => r[side]!.loadgenElu > LOADGEN_SATURATED),
      hop: rounds.some((r) => r[0]!.loadgenElu > LOADGEN_SATURATED),
    },
  };
}

export async function measureWithHop(
  hop: HttpSession,
  subjects: HttpSession[],
): Promise<Array<{ m: Measurement; against: AgainstHop; rounds: RunFigures[][] }>> {
  for (const subject of subjects) await subject.warmUp();
  const hopErrorsBefore = hop.result().errors.total;
  const rounds = await runInTurns([hop, ...subjects]);
  const hopErrors = hop.result().errors.total - hopErrorsBefore;
  return subjects.map((subject, i) => ({ m: subject.result(), against: againstHop(rounds, i + 1, hopErrors), rounds }));
}

/** The ratio and goal cells of a row, and VOID when the hop had errors (the subject's own errors void it in httpRow). */
export function hopCells(a: AgainstHop, m: Measurement, goal?: number): Pick<Row, 'ratio' | 'target'> & Partial<Pick<Row, 'voided'>> {
  const bounds = [
    a.saturated.subject && 'load generator saturated in its runs: a lower bound',
    a.saturated.hop && "load generator saturated in the hop's runs: an upper bound",
  ].filter(Boolean);
  const ratio = [
    `${times(a.rps.median)} hop (rounds ${fmt(a.rps.min, 2)}–${fmt(a.rps.max, 2)})`,
    `CPU/answer ${fmt(m.cpuPerRequestUs)} µs, ${times(a.cpu)} the hop's`,
    ...bounds,
  ].join('; ');
  const clean = m.errors.total === 0 && a.hopErrors === 0;
  const target = goal === undefined ? '' : `≥ ${goal}× hop: ${clean ? (a.rps.median >= goal ? 'met' : 'NOT met') : 'VOID (errors)'}`;
  return { ratio, target, ...(a.hopErrors > 0 ? { voided: `the bare hop had ${a.hopErrors} errors in these rounds` } : {}) };
}
