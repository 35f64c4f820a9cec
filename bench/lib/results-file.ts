import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { renderTable, ROW_KEYS } from './table.js';

const text = z.string();
/** The run that measured a section: what a reader needs to weigh its figures (rendered by renderSection). */
const RUN = z.object({
  date: text,
  /** Short commit of the working tree when the run began, with a remark if it had uncommitted changes. */
  commit: text,
  command: text,
  /** Every scenario of that run, in order: some share figures (S7 reads S1's). */
  scenarios: z.array(text),
  duration: text,
  machine: text,
  node: text,
  http: text,
  load: text,
  /** Anything else a reader must know of that run (a caveat), one item a line. */
  notes: z.array(text),
});
const ROW = z.object(Object.fromEntries(ROW_KEYS.map((key) => [key, text])) as Record<(typeof ROW_KEYS)[number], typeof text>).extend({
  voided: text.optional(),
});
/** Parsed in this key order, so what is read back renders the same text. */
const SECTION = z.object({ scenario: text, run: RUN, rows: z.array(ROW) });
export type RunInfo = z.infer<typeof RUN>;
export type ScenarioResults = z.infer<typeof SECTION>;

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

export function readResults(path: string): ScenarioResults[] {
  return existsSync(path) ? parseResults(readFileSync(path, 'utf8')) : [];
}

function checkSection(value: unknown): ScenarioResults {
  const parsed = SECTION.safeParse(value);
  if (parsed.success) return parsed.data;
  const scenario = (value as { scenario?: unknown } | null)?.scenario;
  const where = `a ${MARK} block${typeof scenario === 'string' ? ` of ${scenario}` : ''}`;
  const [first] = parsed.error.issues;
  throw new Error(`bench/RESULTS.md: ${where}: ${first?.path.join('.')}: ${first?.message}`);
}
