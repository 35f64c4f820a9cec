import type { HttpErrors, Measurement } from './http-load.js';
import { fmt } from './stats.js';

/** A row's cells in the table's order; `value` is req/s (median [min–max]) for HTTP rows, the scenario's own figures otherwise. */
export const ROW_KEYS = ['scenario', 'variant', 'value', 'p99', 'ratio', 'target', 'calls', 'errors', 'notes'] as const;
const HEADER = ['scenario', 'variant', 'req/s (median [range]) or figures', 'p99 ms', 'ratio', 'target', 'upstream calls/query'];

export type Row = Record<(typeof ROW_KEYS)[number], string> & {
  /** Why the figures cannot be trusted (errors, skipped); shown as VOID. */
  voided?: string;
};

/** A row's cells as scenarios give them: `notes` may be a list, joined with "; " without its empty items; `voided` may be undefined. */
export type Cells = Partial<Omit<Row, 'notes'>> & { notes?: string | Array<string | false | undefined> };

/** A row with every cell not given empty. */
export const row = (scenario: string, variant: string, { notes = '', voided, ...cells }: Cells = {}): Row => ({
  ...(Object.fromEntries(ROW_KEYS.map((key) => [key, ''])) as Row),
  scenario,
  variant,
  ...cells,
  notes: typeof notes === 'string' ? notes : notes.filter(Boolean).join('; '),
  ...(voided ? { voided } : {}),
});

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderTable(rows: Row[]): string {
  const header = [...HEADER, 'errors', 'notes'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const value = r.voided ? `VOID (${r.voided}) ${r.value ? `~~${r.value}~~` : ''}`.trim() : r.value;
    const ratio = r.voided && r.ratio ? `VOID ~~${r.ratio}~~` : r.ratio;
    lines.push(`| ${ROW_KEYS.map((key) => cell(key === 'value' ? value : key === 'ratio' ? ratio : r[key])).join(' | ')} |`);
  }
  return lines.join('\n');
}

export const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');

export function errorsText(e: HttpErrors): string {
  const parts = [`${e.non2xx} non-2xx`, `${e.mismatches} mismatched`, `${e.connection} conn`, `${e.timeouts} timeouts`];
  return e.total === 0 ? '0' : parts.filter((part) => !part.startsWith('0 ')).join(', ');
}

/** A row for one HTTP measurement; `ratio`/`target` are filled by the scenario. */
export function httpRow(scenario: string, variant: string, m: Measurement, extra: Cells = {}): Row {
  return row(scenario, variant, {
    value: `${fmt(m.rps.median)} [${fmt(m.rps.min)}–${fmt(m.rps.max)}]`,
    p99: fmt(m.p99),
    calls: m.callsPerQuery === undefined ? '' : fmt(m.callsPerQuery, 2),
    errors: errorsText(m.errors),
    notes: m.notes,
    voided: m.errors.total > 0 ? 'errors' : undefined,
    ...extra,
  });
}

/** a ÷ b, or NaN when b is not positive. */
export const ratioOf = (a: number, b: number): number => (b > 0 ? a / b : Number.NaN);
export const times = (x: number): string => `${fmt(x, 2)}×`;
