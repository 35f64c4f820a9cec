import { existsSync, readFileSync } from 'node:fs';
import { renderTable, type Row } from './table.js';

/** The run that measured a section: what a reader needs to weigh its figures. */
export interface RunInfo {
  /** ISO date and time the run ended. */
  date: string;
  /** Short commit of the working tree when the run began, with a remark if it had uncommitted changes. */
  commit: string;
  /** The command as typed, with the BENCH_* variables that were set. */
  command: string;
  /** Every scenario of that run, in order: some share figures (S7 reads S1's). */
  scenarios: string[];
  /** The run's whole time, and this scenario's own. */
  duration: string;
  machine: string;
  node: string;
  /** The HTTP load settings. */
  http: string;
  /** The machine's load when the run started and while it ran. */
  load: string;
  /** Anything else a reader must know of that run (a caveat), one item a line. */
  notes: string[];
}

export interface ScenarioResults {
  scenario: string;
  run: RunInfo;
  rows: Row[];
}

const MARK = 'bench-results';
const BLOCK = new RegExp(`<!-- ${MARK}\\n([\\s\\S]*?)\\n-->`, 'g');

const INTRO = [
  '# Benchmark results',
  '',
  'The latest figures of every scenario, each section from one run, with its date, commit, command, machine and load.',
  '`npm run bench -- S1 S4` replaces the S1 and S4 sections and keeps the others (`lib/results-file.ts`); compare rows',
  'across sections with care: they may come from different commits on a differently loaded machine.',
  '',
  'A figure marked VOID had errors (non-2xx, mismatched bodies, connection errors, lost events) or could not be measured; ' +
    'see its errors and notes. "loadgen ELU" is the event-loop utilisation of the load-generating process: ' +
    'near 100% the generator, not the server, limited the rate. "server CPU" is the measured child\'s CPU in cores.',
].join('\n');

/** The sections of `previous` whose scenario did not run, and every section of `run`, in scenario order. */
export function mergeResults(previous: ScenarioResults[], run: ScenarioResults[]): ScenarioResults[] {
  const ran = new Set(run.map((s) => s.scenario));
  const kept = previous.filter((s) => !ran.has(s.scenario));
  return [...kept, ...run].sort((a, b) => scenarioOrder(a.scenario, b.scenario));
}

/** S2 before S10; names without a number after those with one. */
function scenarioOrder(a: string, b: string): number {
  const number = (name: string) => Number(/^S(\d+)$/i.exec(name)?.[1] ?? Number.POSITIVE_INFINITY);
  return number(a) - number(b) || a.localeCompare(b);
}

export function renderResults(sections: ScenarioResults[]): string {
  return `${[INTRO, ...sections.map(renderSection)].join('\n\n')}\n`;
}

function renderSection(s: ScenarioResults): string {
  const r = s.run;
  const header = [
    `## ${s.scenario}`,
    '',
    `- date: ${r.date}; commit: ${r.commit}`,
    `- command: \`${r.command}\` (scenarios ${r.scenarios.join(' ')}; ${r.duration})`,
    `- machine: ${r.machine}; node ${r.node}`,
    `- HTTP: ${r.http}`,
    `- load: ${r.load}`,
    ...r.notes.map((note) => `- ${note}`),
  ].join('\n');
  // Checked and in one key order, so what is read back renders the same text. JSON never holds ">"
  // outside its strings, so escaping it there keeps "-->" out of the comment.
  const data = JSON.stringify(checkSection(s), null, 1).replace(/>/g, '\\u003e');
  return `${header}\n\n<!-- ${MARK}\n${data}\n-->\n\n${renderTable(s.rows)}`;
}

/** The sections written by `renderResults`; a clear error when the text holds figures in another form. */
export function parseResults(text: string): ScenarioResults[] {
  const sections: ScenarioResults[] = [];
  for (const match of text.matchAll(BLOCK)) {
    let value: unknown;
    try {
      value = JSON.parse(match[1]!);
    } catch (error) {
      throw new Error(`bench/RESULTS.md: a ${MARK} block is not JSON (${(error as Error).message})`, { cause: error });
    }
    sections.push(checkSection(value));
  }
  if (sections.length === 0 && /^\|\s*scenario\s*\|/m.test(text)) {
    throw new Error(
      `bench/RESULTS.md holds a table without ${MARK} blocks (an older form): convert it, or move it away, before a run replaces it`,
    );
  }
  const names = sections.map((s) => s.scenario);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice) throw new Error(`bench/RESULTS.md has two sections for ${twice}: a scenario's rows come from one run`);
  return sections;
}

/** Scenarios whose heading or table in `text` is not what their JSON renders: an edit there that the next run will not keep. */
export function editedOutsideData(text: string, sections: ScenarioResults[]): string[] {
  return sections.filter((s) => !text.includes(renderSection(s))).map((s) => s.scenario);
}

/** The file's sections; none when it does not exist yet. */
export function readResults(path: string): ScenarioResults[] {
  return existsSync(path) ? parseResults(readFileSync(path, 'utf8')) : [];
}

/** What a section holds, in the key order it is written in: 's' a string, [shape] a list, a trailing '?' an optional key. */
type Shape = 's' | [Shape] | { [key: string]: Shape };
const ROW: Shape = Object.fromEntries(
  [...['scenario', 'variant', 'value', 'p99', 'ratio', 'target', 'calls', 'errors', 'notes'], 'voided?'].map((k) => [k, 's']),
);
const RUN: Shape = {
  date: 's',
  commit: 's',
  command: 's',
  scenarios: ['s'],
  duration: 's',
  machine: 's',
  node: 's',
  http: 's',
  load: 's',
  notes: ['s'],
};
const SECTION: Shape = { scenario: 's', run: RUN, rows: [ROW] };

/** `value` checked against `shape` and rebuilt in its key order, so what is read back renders the same text. */
function checked(value: unknown, shape: Shape, where: string): unknown {
  const fail = (what: string) => new Error(`bench/RESULTS.md: ${where} must be ${what}, got ${JSON.stringify(value)?.slice(0, 80)}`);
  if (shape === 's') {
    if (typeof value !== 'string') throw fail('a string');
    return value;
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) throw fail('a list');
    return value.map((item, i) => checked(item, shape[0], `${where}[${i}]`));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail('an object');
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(shape)) {
    const name = key.replace(/\?$/, '');
    if (key.endsWith('?') && record[name] === undefined) continue;
    out[name] = checked(record[name], inner, `${where}.${name}`);
  }
  return out;
}

function checkSection(value: unknown): ScenarioResults {
  const scenario = (value as { scenario?: unknown } | null)?.scenario;
  return checked(value, SECTION, `a ${MARK} block${typeof scenario === 'string' ? ` of ${scenario}` : ''}`) as ScenarioResults;
}
