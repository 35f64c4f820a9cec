import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PRELOAD = fileURLToPath(new URL('./child-preload.ts', import.meta.url));

export type Child = Awaited<ReturnType<typeof spawnNode>>;

const running = new Set<ChildProcess>();

export function killAllNow(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

export const stopAll = () => Promise.all([...running].map(stopProcess));

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    // The gateway's graceful shutdown may wait for connections; the bench does not, unless a CPU profile is being written (servers.ts).
    const timer = setTimeout(() => child.kill('SIGKILL'), process.env.BENCH_CPU_PROF ? 15_000 : 1_500);
    await exited;
    clearTimeout(timer);
  }
  running.delete(child);
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** The fields of /proc/<pid>/stat after the command name (field 3 on); throws where there is none. */
export function procStat(pid: number | 'self'): number[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
}

/** User + system CPU seconds of a process (USER_HZ 100), or NaN. */
export function cpuSecondsOf(pid: number): number {
  try {
    const fields = procStat(pid);
    return (fields[11]! + fields[12]!) / 100;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds of each of `pids` still running, by pid. */
export const cpuSecondsOfPids = (pids: readonly number[]): Map<number, number> =>
  new Map(pids.map((pid) => [pid, cpuSecondsOf(pid)] as const).filter(([, used]) => !Number.isNaN(used)));

/** CPU seconds of every process named `name` (its /proc comm), by pid. */
export function cpuSecondsOfProcesses(name: string): Map<number, number> {
  const named = (pid: string) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name;
    } catch {
      return false;
    }
  };
  return cpuSecondsOfPids(
    readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry) && named(entry))
      .map(Number),
  );
}

export function cpuSecondsBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const [pid, used] of after) total += used - (before.get(pid) ?? 0);
  return total;
}

export interface SpawnOptions {
  name: string;
  entry: string;
  args?: string[];
  /** Layered over this process's environment; `undefined` removes an inherited variable. */
  env?: Record<string, string | undefined>;
  /** A path that answers 200 once the child serves, or a check of its own; polled every 50 ms for up to 30 s. @default '/readyz' */
  ready?: string | ((url: string) => Promise<boolean>);
  nodeFlags?: string[];
  /** CPUs the child (every thread of it) may run on, a `taskset -c` list such as "0"; the caller checks taskset exists (pinning.ts). */
  cpus?: string;
  /** Nice value to start the child at (every thread of it, through `nice -n`; lower runs first). */
  nice?: number;
}

export type Placement = Pick<SpawnOptions, 'cpus' | 'nice'>;

/** Starts `node --import tsx <entry>` with an IPC channel (so the child notices when this process disappears: child-preload.ts). */
function spawnChild(options: SpawnOptions, env: Record<string, string | undefined>): ChildProcess & { output(): string } {
  const nodeArgs = [...(options.nodeFlags ?? []), '--import', 'tsx', '--import', PRELOAD, options.entry, ...(options.args ?? [])];
  // nice and taskset exec what follows in their own place: the pid, and so the /proc CPU figures, are node's.
  const prefix = [
    ...(options.nice === undefined ? [] : ['nice', '-n', String(options.nice)]),
    ...(options.cpus === undefined ? [] : ['taskset', '-c', options.cpus]),
  ];
  const [command, ...args] = [...prefix, process.execPath, ...nodeArgs] as [string, ...string[]];
  const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  running.add(child);
  let tail = '';
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-4_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('exit', () => running.delete(child));
  return Object.assign(child, { output: () => tail });
}

/** Starts a server child on a free loopback port (env PORT, HOST) and waits until it is ready. */
export async function spawnNode(options: SpawnOptions) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnChild(options, { ...options.env, PORT: String(port), HOST: '127.0.0.1' });
  const handle = {
    name: options.name,
    pid: child.pid ?? -1,
    url,
    port,
    cpuSeconds: () => cpuSecondsOf(child.pid ?? -1),
    /** SIGUSR2: a forced garbage collection (child-preload.ts). */
    signal: (name: NodeJS.Signals): void => void child.kill(name),
    stop: () => stopProcess(child),
  };
  const ready = typeof options.ready === 'function' ? options.ready : answers200(options.ready ?? '/readyz');
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(50)) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${options.name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${child.output().trim()}`);
    }
    if (await ready(url).catch(() => false)) return handle;
  }
  await handle.stop();
  throw new Error(`${options.name} was not ready within 30 s:\n${child.output().trim()}`);
}

/** A helper process that is not a server (fleet-workers.ts), driven over IPC, killed with the others on every way out. */
export function spawnIpcChild(entry: string, args: string[]) {
  const child = spawnChild({ name: entry, entry, args }, {});
  return { process: child, output: child.output, cpuSeconds: () => cpuSecondsOf(child.pid ?? -1), stop: () => stopProcess(child) };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const answers200 = (path: string) => async (url: string) => {
  const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(1_000) });
  await response.arrayBuffer();
  return response.status === 200;
};
