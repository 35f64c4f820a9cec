import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { buildDist } from '../scripts/build.js';
import { killAllNow, procStat, REPO_ROOT, stopAll } from './lib/children.js';
import { SETTINGS, type Measurement } from './lib/http-load.js';
import type { Scenario } from './lib/scenario.js';
import { startUpstream } from './lib/servers.js';
import { mergeResults, readResults, renderResults, type RunInfo, type ScenarioResults } from './lib/results-file.js';
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

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1_000).toFixed(0)} s`;
const ran: { name: string; rows: Row[]; seconds: number }[] = [];
const shared = new Map<string, Measurement>();
const loadBefore = os.loadavg();
// The working tree as built now is what is measured: its commit and uncommitted changes are those of this moment.
const commitAtStart = commitText();
const machineBefore = machineCpu();
// Gateways run the built dist/, as deployed (lib/gateway-main.ts).
await buildDist();
const upstream = await startUpstream();
try {
  for (const scenario of selected) {
    const log = (message: string) => process.stderr.write(`[${elapsed()}] ${scenario.name} ${message}\n`);
    log(`— ${scenario.title}`);
    const scenarioStarted = performance.now();
    let rows: Row[];
    try {
      rows = await scenario.run({ upstream, shared, log });
    } catch (error) {
      // One failing scenario must not lose the others' figures.
      log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      const why = String(error instanceof Error ? error.message : error).split('\n')[0]!;
      rows = [row(scenario.name, scenario.title, { errors: 'scenario failed', voided: why.slice(0, 200) })];
    }
    ran.push({ name: scenario.name, rows, seconds: (performance.now() - scenarioStarted) / 1_000 });
  }
} finally {
  await stopAll();
}
process.stdout.write(`\n${renderTable(ran.flatMap((r) => r.rows))}\n`);

const cpus = os.cpus();
const run: Omit<RunInfo, 'duration'> = {
  date: new Date().toISOString(),
  commit: commitAtStart,
  command: [...benchVariables(), 'npm run bench', ...(argv.length > 0 ? ['--', ...argv] : [])].join(' '),
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
const total = elapsed();
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
const kept = previous.filter((p) => !ran.some((r) => r.name === p.scenario)).map((p) => p.scenario);
process.stderr.write(
  `[${elapsed()}] wrote ${ran.map((r) => r.name).join(' ')} to bench/RESULTS.md, kept ${kept.join(' ') || 'nothing else'}\n`,
);

/** The commit the working tree is at, and whether the code measured differs from it. */
function commitText(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  const paths = ['src', 'bench', 'scripts', 'package.json', 'package-lock.json', ':!bench/RESULTS.md'];
  const status = git('status', '--porcelain', '--', ...paths);
  const dirty = status ? status.split('\n').length : 0;
  return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ` with ${dirty} uncommitted change(s) under src/, bench/, scripts/ or in the package files` : ''}`;
}

/** The bench's variables as set, an address's value left out (it may hold a password). */
function benchVariables(): string[] {
  return Object.entries(process.env)
    .filter(([name]) => name.startsWith('BENCH_'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => (/(URL|ENDPOINT)$/.test(name) ? `${name}=…` : `${name}=${value}`));
}

/** Seconds since boot, all cores, busy (user, nice, system, irq, softirq) and stolen by the hypervisor; `own`: this process and its exited children. */
function machineCpu() {
  const at = performance.now() / 1_000;
  try {
    const cpu = /^cpu\s+(.*)$/m.exec(readFileSync('/proc/stat', 'utf8'))![1]!;
    const [user, nice, system, , , irq, softirq, steal] = cpu.split(/\s+/).map(Number);
    const [utime, stime, cutime, cstime] = procStat('self').slice(11, 15);
    return {
      busy: (user! + nice! + system! + irq! + softirq!) / 100,
      steal: steal! / 100,
      own: (utime! + stime! + cutime! + cstime!) / 100,
      at,
    };
  } catch {
    return { busy: Number.NaN, steal: Number.NaN, own: Number.NaN, at };
  }
}

/** Whether others used the machine while the bench ran: CPU not ours, and CPU the hypervisor took. */
function othersText(before: ReturnType<typeof machineCpu>, after: ReturnType<typeof machineCpu>): string {
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
