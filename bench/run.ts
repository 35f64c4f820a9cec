import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { buildDist } from '../scripts/build.js';
import { killAllNow, REPO_ROOT, stopAll } from './lib/children.js';
import { SETTINGS } from './lib/http-load.js';
import type { Measurement } from './lib/http-load.js';
import type { Scenario } from './lib/scenario.js';
import { startUpstream } from './lib/servers.js';
import { editedOutsideData, mergeResults, readResults, renderResults, type RunInfo, type ScenarioResults } from './lib/results-file.js';
import { renderTable, row, type Row } from './lib/table.js';
import { s1 } from './scenarios/s1-single.js';
import { s2 } from './scenarios/s2-dashboard.js';
import { s3 } from './scenarios/s3-mutation.js';
import { s4 } from './scenarios/s4-fanout.js';
import { s5 } from './scenarios/s5-sustained.js';
import { s6 } from './scenarios/s6-memory.js';
import { s7 } from './scenarios/s7-peers.js';
import { s8 } from './scenarios/s8-latency.js';
import { s9 } from './scenarios/s9-layers.js';
import { s10 } from './scenarios/s10-history.js';

const ALL: Scenario[] = [s1, s2, s3, s4, s5, s6, s7, s8, s9, s10];

// Children die with us: synchronously on exit, after a clean stop on signals and crashes.
process.on('exit', killAllNow);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    process.stderr.write(`\n${signal}: stopping children\n`);
    void stopAll().finally(() => process.exit(130));
  });
}
process.on('uncaughtException', (error) => {
  process.stderr.write(`uncaught: ${error.stack ?? String(error)}\n`);
  void stopAll().finally(() => process.exit(1));
});

const argv = process.argv.slice(2);
const wanted = argv.map((arg) => arg.toUpperCase());
const unknown = wanted.filter((name) => !ALL.some((s) => s.name === name));
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario(s): ${unknown.join(', ')}; known: ${ALL.map((s) => s.name).join(' ')}\n`);
  process.exit(2);
}
const selected = wanted.length === 0 ? ALL : ALL.filter((s) => wanted.includes(s.name));
const RESULTS = `${REPO_ROOT}bench/RESULTS.md`;
// Read before measuring: a file the run could not merge into would cost its figures at the end.
let previous: ScenarioResults[];
try {
  previous = readResults(RESULTS);
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(2);
}
const edited = existsSync(RESULTS) ? editedOutsideData(readFileSync(RESULTS, 'utf8'), previous) : [];
if (edited.length > 0) {
  process.stderr.write(
    `bench/RESULTS.md: the heading or table of ${edited.join(' ')} differs from its bench-results JSON; ` +
      `the file will be written from the JSON (stop now and edit it there to keep the change)\n`,
  );
}

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1_000).toFixed(0)} s`;
const rows: Row[] = [];
/** Each scenario's own rows and time, by the scenario that ran them. */
const ran: { name: string; rows: Row[]; seconds: number }[] = [];
const shared = new Map<string, Measurement>();
const loadBefore = os.loadavg();
// The commit the working tree was at when the run began (others may commit while it runs).
const headAtStart = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
// The code measured is the working tree as built now: its commit and uncommitted changes are those of this moment.
const commitAtStart = commitText();
const machineBefore = machineCpu();
// Gateways run the built dist/, as deployed (lib/gateway-main.ts); built now, so it is the working tree's.
await buildDist();
const upstream = await startUpstream();
try {
  for (const scenario of selected) {
    const log = (message: string) => process.stderr.write(`[${elapsed()}] ${scenario.name} ${message}\n`);
    log(`— ${scenario.title}`);
    const scenarioStarted = performance.now();
    let own: Row[];
    try {
      own = await scenario.run({ upstream, shared, log });
    } catch (error) {
      // One failing scenario must not lose the others' figures.
      log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      const why = String(error instanceof Error ? error.message : error).split('\n')[0]!;
      own = [row(scenario.name, scenario.title, { errors: 'scenario failed', voided: why.slice(0, 200) })];
    }
    rows.push(...own);
    ran.push({ name: scenario.name, rows: own, seconds: (performance.now() - scenarioStarted) / 1_000 });
  }
} finally {
  await stopAll();
}

const cpus = os.cpus();
process.stdout.write(`\n${renderTable(rows)}\n`);

const total = elapsed();
const run: Omit<RunInfo, 'duration'> = {
  date: new Date().toISOString(),
  commit: commitAtStart,
  command: commandText(),
  scenarios: selected.map((s) => s.name),
  machine:
    `${cpus.length} cores, ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ` +
    `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}`,
  node: process.version,
  http:
    `${SETTINGS.connections} connections, ${SETTINGS.warmupSeconds} s warm-up + ${SETTINGS.runs} × ${SETTINGS.runSeconds} s runs ` +
    `(median [min–max]; p99 is the median of the runs' p99); ` +
    `load generated in the parent, servers in child processes, all on this machine`,
  load: `load average (1 min) when the bench started: ${loadBefore[0]!.toFixed(2)}; ${othersText(machineBefore, machineCpu())}`,
  notes: [],
};
const sections: ScenarioResults[] = ran.map((r) => ({
  scenario: r.name,
  run: { ...run, duration: `${total} in all, this scenario ${r.seconds.toFixed(0)} s` },
  rows: r.rows,
}));
// Read again: the file may have changed while the run went on (another run, a checkout); the start's copy if it became unreadable.
try {
  previous = readResults(RESULTS);
} catch (error) {
  process.stderr.write(`${(error as Error).message}; merging into the copy read at the start\n`);
}
writeFileSync(RESULTS, renderResults(mergeResults(previous, sections)));
process.stderr.write(
  `[${elapsed()}] wrote ${sections.map((s) => s.scenario).join(' ')} to bench/RESULTS.md, kept ${
    previous
      .filter((p) => !sections.some((s) => s.scenario === p.scenario))
      .map((p) => p.scenario)
      .join(' ') || 'nothing else'
  }\n`,
);

/** The commit the working tree is at, and whether the code measured differs from it. */
function commitText(): string {
  const dirty = execFileSync(
    'git',
    ['status', '--porcelain', '--', 'src', 'bench', 'scripts', 'package.json', 'package-lock.json', ':!bench/RESULTS.md'],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  )
    .split('\n')
    .filter(Boolean).length;
  return `${headAtStart}${dirty ? ` with ${dirty} uncommitted change(s) under src/, bench/, scripts/ or in the package files` : ''}`;
}

/** The command as typed, with the bench's variables (an address's value left out: it may hold a password). */
function commandText(): string {
  const variables = Object.entries(process.env)
    .filter(([name]) => name.startsWith('BENCH_'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => (/(URL|ENDPOINT)$/.test(name) ? `${name}=…` : `${name}=${value}`));
  return [...variables, 'npm run bench', ...(argv.length > 0 ? ['--', ...argv] : [])].join(' ');
}

interface MachineCpu {
  /** Seconds since boot, all cores: busy (user, nice, system, irq, softirq), stolen by the hypervisor, and in total. */
  busy: number;
  steal: number;
  total: number;
  /** CPU seconds of this process and of its children that have exited (gateways, upstream, npm ci…). */
  own: number;
  at: number;
}

/** Linux /proc figures (USER_HZ 100); NaN elsewhere. */
function machineCpu(): MachineCpu {
  try {
    const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const self = readFileSync('/proc/self/stat', 'utf8');
    const fields = self
      .slice(self.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    // utime, stime, cutime, cstime: fields 14–17 of stat, 11–14 after the command name.
    const own = (fields[11]! + fields[12]! + fields[13]! + fields[14]!) / 100;
    const busy = (user! + nice! + system! + irq! + softirq!) / 100;
    return { busy, steal: steal! / 100, total: busy + (idle! + iowait! + steal!) / 100, own, at: performance.now() / 1_000 };
  } catch {
    return { busy: Number.NaN, steal: Number.NaN, total: Number.NaN, own: Number.NaN, at: performance.now() / 1_000 };
  }
}

/** Whether others used the machine while the bench ran: CPU not ours, and CPU the hypervisor took. */
function othersText(before: MachineCpu, after: MachineCpu): string {
  const seconds = after.at - before.at;
  const others = (after.busy - before.busy - (after.own - before.own)) / seconds;
  const steal = (after.steal - before.steal) / seconds;
  if (!Number.isFinite(others)) return 'CPU used by other processes: unknown (no /proc)';
  const disturbed = others > 0.1 || steal > 0.1;
  return (
    `during the run, other processes used ${others.toFixed(2)} cores on average ` +
    `and the hypervisor took ${steal.toFixed(2)} (steal): ${disturbed ? 'DISTURBED, run again when the machine is quiet' : 'quiet'}`
  );
}
