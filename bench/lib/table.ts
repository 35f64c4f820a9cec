import type { HttpErrors, Measurement } from './http-load.js';
import { fmt } from './stats.js';

/* The one results table: a row per scenario and variant. */

export interface Row {
  scenario: string;
  variant: string;
  /** req/s (median [min–max]) for HTTP rows; the scenario's own figures, with units, otherwise. */
  value: string;
  p99: string;
  ratio: string;
  /** The target and whether it is met. */
  target: string;
  calls: string;
  errors: string;
  notes: string;
  /** Why the figures cannot be trusted (errors, skipped); shown as VOID. */
  voided?: string;
}

/** A row with every cell not given empty. */
export const row = (scenario: string, variant: string, cells: Partial<Row> = {}): Row => ({
  scenario,
  variant,
  value: '',
  p99: '',
  ratio: '',
  target: '',
  calls: '',
  errors: '',
  notes: '',
  ...cells,
});

const HEADER = [
  'scenario',
  'variant',
  'req/s (median [range]) or figures',
  'p99 ms',
  'ratio',
  'target',
  'upstream calls/query',
  'errors',
  'notes',
];

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderTable(rows: Row[]): string {
  const lines = [`| ${HEADER.join(' | ')} |`, `|${HEADER.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const value = r.voided ? `VOID (${r.voided}) ${r.value ? `~~${r.value}~~` : ''}`.trim() : r.value;
    const ratio = r.voided && r.ratio ? `VOID ~~${r.ratio}~~` : r.ratio;
    lines.push(`| ${[r.scenario, r.variant, value, r.p99, ratio, r.target, r.calls, r.errors, r.notes].map(cell).join(' | ')} |`);
  }
  return lines.join('\n');
}

export const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');

export const rpsText = (m: Measurement): string => `${fmt(m.rps.median)} [${fmt(m.rps.min)}–${fmt(m.rps.max)}]`;

export function errorsText(e: HttpErrors): string {
  if (e.total === 0) return '0';
  const parts = [
    e.non2xx && `${e.non2xx} non-2xx`,
    e.mismatches && `${e.mismatches} mismatched`,
    e.connection && `${e.connection} conn`,
    e.timeouts && `${e.timeouts} timeouts`,
  ];
  return parts.filter(Boolean).join(', ');
}

/** A row for one HTTP measurement; `ratio`/`target` are filled by the scenario. */
export function httpRow(scenario: string, variant: string, m: Measurement, extra: Partial<Row> = {}): Row {
  return row(scenario, variant, {
    value: rpsText(m),
    p99: fmt(m.p99),
    calls: m.callsPerQuery === undefined ? '' : fmt(m.callsPerQuery, 2),
    errors: errorsText(m.errors),
    notes: m.notes.join('; '),
    ...(m.errors.total > 0 ? { voided: 'errors' } : {}),
    ...extra,
  });
}

/** "0.62×" of a over b, or n/a. */
export const ratioOf = (a: number, b: number): number => (b > 0 ? a / b : Number.NaN);
export const times = (x: number): string => `${fmt(x, 2)}×`;
