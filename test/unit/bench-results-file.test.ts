import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mergeResults, parseResults, renderResults, type RunInfo, type ScenarioResults } from '../../bench/lib/results-file.js';
import type { Row } from '../../bench/lib/table.js';

/*
 * bench/RESULTS.md keeps the latest figures of every scenario: a run of some
 * scenarios replaces their sections and keeps the others. No bench runs here:
 * the runs are written by hand, as run.ts hands them over.
 */

const run = (date: string, commit: string, scenarios: string[]): RunInfo => ({
  date,
  commit,
  command: `npm run bench -- ${scenarios.join(' ')}`,
  scenarios,
  duration: '100 s in all, this scenario 50 s',
  machine: '2 cores, AMD EPYC, 23.5 GiB RAM, Linux 6.18',
  node: 'v20.20.2',
  http: '32 connections, 1 s warm-up + 3 × 3 s runs',
  load: 'load average (1 min) when the bench started: 0.20; quiet',
  notes: [],
});

const row = (scenario: string, variant: string, value: string, extra: Partial<Row> = {}): Row => ({
  scenario,
  variant,
  value,
  p99: '12.5',
  ratio: '',
  target: '',
  calls: '1.00',
  errors: '0',
  notes: 'server CPU 0.90 cores',
  ...extra,
});

const OLD = run('2026-11-20T10:00:00.000Z', 'aaaaaaa', ['S1', 'S10']);
const NEW = run('2026-11-26T12:00:00.000Z', 'bbbbbbb', ['S10']);

const previousFile = renderResults([
  {
    scenario: 'S1',
    run: OLD,
    rows: [row('S1', 'bare hop', '5,000 [4,900–5,100]'), row('S1', 'gateway, cache off', '1,800 [1,700–1,900]', { ratio: '0.36×' })],
  },
  {
    scenario: 'S10',
    run: OLD,
    rows: [
      row('S10', 'recentTransactions, in process', '611 [366–1,002]'),
      row('S10', 'memory per stored transaction', 'heap 2,609 B'),
      row('S10', 'transactionStats', '65 [56–67]'),
    ],
  },
]);

const s10Run: ScenarioResults[] = [
  {
    scenario: 'S10',
    run: NEW,
    // Fewer rows than before, one of them void: none of the old ones may survive beside them.
    rows: [
      row('S10', 'recentTransactions, in process', '2,100 [2,000–2,200]'),
      row('S10', 'transactionStats', '', { voided: 'errors', errors: '3 non-2xx' }),
    ],
  },
];

describe('bench/RESULTS.md', () => {
  it('keeps the scenarios that did not run and replaces, whole, those that did', () => {
    const merged = mergeResults(parseResults(previousFile), s10Run);
    const written = renderResults(merged);
    const sections = parseResults(written);

    expect(sections.map((s) => s.scenario)).toEqual(['S1', 'S10']);
    const [s1, s10] = sections as [ScenarioResults, ScenarioResults];
    expect(s1.rows.map((r) => r.value)).toEqual(['5,000 [4,900–5,100]', '1,800 [1,700–1,900]']);
    expect(s1.run).toEqual(OLD);
    expect(s10.rows.map((r) => r.value)).toEqual(['2,100 [2,000–2,200]', '']);
    expect(s10.rows[1]!.voided).toBe('errors');
    expect(s10.run).toEqual(NEW);
    expect(written).not.toContain('heap 2,609 B');
    expect(written).not.toContain('611 [366–1,002]');
  });

  it('never writes a scenario whose rows come from two runs', () => {
    const sections = parseResults(renderResults(mergeResults(parseResults(previousFile), s10Run)));
    for (const s of sections) expect(s.rows.every((r) => r.scenario === s.scenario)).toBe(true);
    expect(sections.filter((s) => s.scenario === 'S10')).toHaveLength(1);
    // A file with a scenario twice is refused, not merged into.
    const twice = renderResults([...parseResults(previousFile), ...s10Run]);
    expect(() => parseResults(twice)).toThrow('two sections for S10');
  });

  it('shows every section its date and commit above its rows', () => {
    const written = renderResults(mergeResults(parseResults(previousFile), s10Run));
    const [, s1Text, s10Text] = written.split(/^## /m) as [string, string, string];
    expect(s1Text).toContain('- date: 2026-11-20T10:00:00.000Z; commit: aaaaaaa');
    expect(s10Text).toContain('- date: 2026-11-26T12:00:00.000Z; commit: bbbbbbb');
    expect(s10Text).toContain('`npm run bench -- S10`');
    expect(s10Text).toMatch(/^\| S10 \| recentTransactions, in process \| 2,100 \[2,000–2,200\] \|/m);
    expect(s10Text).toContain('VOID (errors)');
  });

  it('reads back what it wrote, whatever the cells hold', () => {
    const awkward: ScenarioResults[] = [
      {
        scenario: 'S7',
        run: { ...NEW, scenarios: ['S1', 'S7'], notes: ['a caveat with `code`, a | pipe and --> an arrow'] },
        rows: [row('S7', 'a | b --> c <!-- d', 'line one\nline two', { notes: '"quoted" \\ backslash, ≥ 2×' })],
      },
      ...s10Run,
    ];
    const written = renderResults(awkward);
    expect(parseResults(written)).toEqual(awkward);
    // Written twice, the same text: a run that replaces nothing changes nothing.
    expect(renderResults(parseResults(written))).toBe(written);
  });

  it('refuses figures in a form it cannot read, rather than writing over them', () => {
    expect(() => parseResults('# Benchmark results\n\n| scenario | variant |\n|---|---|\n| S5 | x |\n')).toThrow('older form');
    expect(() => parseResults('<!-- bench-results\n{"scenario": "S1"\n-->')).toThrow('not JSON');
    expect(() => parseResults('<!-- bench-results\n{"scenario": "S1", "run": {}, "rows": []}\n-->')).toThrow(
      'run.date: Invalid input: expected string',
    );
    expect(parseResults('')).toEqual([]);
  });

  it('holds the figures in the repository in the form it reads, one section per scenario in their order', () => {
    const file = readFileSync(fileURLToPath(new URL('../../bench/RESULTS.md', import.meta.url)), 'utf8');
    const sections = parseResults(file);
    // Whichever scenarios were run last: each once, S1 to S10 in order.
    const scenarios = sections.map((s) => s.scenario);
    expect(scenarios.length).toBeGreaterThan(0);
    for (const name of scenarios) expect(name).toMatch(/^S([1-9]|10)$/);
    expect(scenarios).toEqual([...new Set(scenarios)].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))));
    for (const s of sections) {
      expect(s.run.date).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(s.run.commit).toMatch(/^[0-9a-f]{7}/);
      expect(s.rows.length).toBeGreaterThan(0);
    }
    expect(renderResults(sections)).toBe(file);
  });
});
