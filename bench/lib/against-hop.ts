import type { HttpSession, Measurement, RunFigures } from './http-load.js';
import { runInTurns } from './paired.js';
import { fmt, median } from './stats.js';
import { times, type Row } from './table.js';

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
