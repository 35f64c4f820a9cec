import type { Build } from './builds.js';
import type { Child } from './children.js';
import { httpSession, SETTINGS, type HttpSession, type HttpTarget, type Measurement, type RunFigures } from './http-load.js';
import type { Upstream } from './servers.js';
import { fmt, median } from './stats.js';
import { httpRow, times, type Comparison, type Row } from './table.js';

/** "No more than 10% slower": after keeps ≥ 90% of before's req/s, and spends ≤ 1/0.9 of its CPU per request. */
export const SLOWER_LIMIT = 0.9;

export interface Side {
  build: Build;
  target: HttpTarget;
  server: Child;
}

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

export async function measurePaired(before: Side, after: Side, upstream: Upstream): Promise<Paired> {
  const b = httpSession(before.target, { upstream, server: before.server });
  const a = httpSession(after.target, { upstream, server: after.server });
  await b.warmUp();
  await a.warmUp();
  // before-after, after-before, …
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
