import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PRELOAD = fileURLToPath(new URL('./child-preload.ts', import.meta.url));

export interface Child {
  name: string;
  pid: number;
  url: string;
  port: number;
  /** Last few KB of the child's stdout and stderr, for error messages. */
  output(): string;
  /** User + system CPU seconds the child has used so far (Linux /proc), or NaN. */
  cpuSeconds(): number;
  /** Sends a signal to this child (SIGUSR2: a forced garbage collection, see child-preload.ts). */
  signal(name: NodeJS.Signals): void;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

export function killAllNow(): void {
  for (const child of running) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  running.clear();
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((child) => stopProcess(child)));
}

/** How long a child may take to exit after SIGTERM before it is killed, by child. */
const graceMs = new WeakMap<ChildProcess, number>();

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    running.delete(child);
    return;
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  // The gateway's graceful shutdown may wait for connections; the bench does not.
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs.get(child) ?? 1_500);
  await exited;
  clearTimeout(timer);
  running.delete(child);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** USER_HZ is 100 on every Linux the harness targets. */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** The nice value of a process (Linux /proc), or NaN. */
export function niceOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 19 of stat; 17th after the command name.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  } catch {
    return Number.NaN;
  }
}

export function cpuSecondsOfProcesses(name: string): Map<number, number> {
  const seconds = new Map<number, number>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== name) continue;
    } catch {
      continue;
    }
    const used = cpuSecondsOf(Number(pid));
    if (!Number.isNaN(used)) seconds.set(Number(pid), used);
  }
  return seconds;
}

export function cpuSecondsBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const [pid, used] of after) total += used - (before.get(pid) ?? 0);
  return total;
}

export interface SpawnOptions {
  name: string;
  /** Path of the entry module, relative to the repository. */
  entry: string;
  /** Arguments after the entry. @default none */
  args?: string[];
  /** Layered over this process's environment; `undefined` removes an inherited variable. */
  env: Record<string, string | undefined>;
  /** Resolves true once the child serves; polled every 50 ms. */
  ready(url: string): Promise<boolean>;
  nodeFlags?: string[];
  /** @default 30000 */
  readyTimeoutMs?: number;
  /** Time from SIGTERM to SIGKILL on stop (a child writing a CPU profile at exit needs more). @default 1500 */
  stopGraceMs?: number;
  /** CPUs the child (every thread of it) may run on, a `taskset -c` list such as "0"; the caller checks taskset exists (pinning.ts). */
  cpus?: string;
  /** Nice value to start the child at (every thread of it, through `nice -n`; lower runs first). */
  nice?: number;
}

/** Where and at which priority a child runs (S8, pinning.ts). */
export type Placement = Pick<SpawnOptions, 'cpus' | 'nice'>;

/** Starts `node --import tsx <entry>` on a free loopback port (env PORT, HOST) and waits for `ready`. */
export async function spawnNode(options: SpawnOptions): Promise<Child> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const nodeArgs = [...(options.nodeFlags ?? []), '--import', 'tsx', '--import', PRELOAD, options.entry, ...(options.args ?? [])];
  // nice and taskset exec what follows in their own place: the pid, and so the /proc CPU figures, are node's.
  const prefix = [
    ...(options.nice === undefined ? [] : ['nice', '-n', String(options.nice)]),
    ...(options.cpus === undefined ? [] : ['taskset', '-c', options.cpus]),
  ];
  const [command, ...args] = [...prefix, process.execPath, ...nodeArgs] as [string, ...string[]];
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env, PORT: String(port), HOST: '127.0.0.1' },
    // 'ipc': the child notices when this process disappears (child-preload.ts).
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  if (options.stopGraceMs !== undefined) graceMs.set(child, options.stopGraceMs);
  const handle: Child = { ...track(child), name: options.name, pid: child.pid ?? -1, url, port, signal: (name) => void child.kill(name) };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${options.name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${handle.output().trim()}`);
    }
    if (await options.ready(url).catch(() => false)) return handle;
    await sleep(50);
  }
  await handle.stop();
  throw new Error(`${options.name} was not ready within ${options.readyTimeoutMs ?? 30_000} ms:\n${handle.output().trim()}`);
}

/** A helper process that is not a server: driven over IPC, killed with the others on every way out. */
export interface IpcChild {
  process: ChildProcess;
  output(): string;
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** Starts `node --import tsx <entry> <args>` with an IPC channel (fleet-workers.ts). */
export function spawnIpcChild(entry: string, args: string[]): IpcChild {
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', PRELOAD, entry, ...args], {
    cwd: REPO_ROOT,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  return { ...track(child), process: child };
}

/** Registers a child to be killed with the others, keeping the last few KB of its output. */
function track(child: ChildProcess): Pick<IpcChild, 'output' | 'cpuSeconds' | 'stop'> {
  running.add(child);
  let tail = '';
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-4_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('exit', () => running.delete(child));
  return { output: () => tail, cpuSeconds: () => cpuSecondsOf(child.pid ?? -1), stop: () => stopProcess(child) };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** GET `path` answers 200. */
export const answers200 = (path: string) => async (url: string) => {
  const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(1_000) });
  await response.arrayBuffer();
  return response.status === 200;
};
