import { createServer, type IncomingMessage } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnNode, type Child, type Placement } from './children.js';
import { BodyCheck } from './expect.js';
import type { HttpTarget, Watch } from './http-load.js';
import { loadGenerator, type LoadGenerator } from './open-loop.js';
import { contractCalls } from './servers.js';
import { pace, type PacedWebhook, type PacerRun } from './webhook-pacer.js';

export function startLoadGenerator(placement: Placement = {}): Promise<Child> {
  return spawnNode({
    name: 'S8 load generator',
    entry: 'bench/lib/load-generator.ts',
    ...placement,
  });
}

async function post<T>(generator: Child, path: string, body: unknown, seconds = 0): Promise<T> {
  const response = await fetch(`${generator.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(seconds * 1_000 + 60_000),
  });
  if (response.status !== 200) throw new Error(`load generator ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** S5's webhooks paced from the generator process (webhook-pacer.ts); one entry per webhook. */
export const runPacer = (generator: Child, run: PacerRun): Promise<PacedWebhook[]> =>
  post<PacedWebhook[]>(generator, '/pace', run, run.seconds + run.graceMs / 1_000);

/** `target` driven from the generator process, over a pool of its own there. */
export async function remoteGenerator(generator: Child, target: HttpTarget): Promise<LoadGenerator> {
  const { id } = await post<{ id: number }>(generator, '/targets', { target: toWire(target) });
  return {
    openLoop: (rate, seconds) => post(generator, '/open', { id, rate, seconds }, seconds),
    closedLoop: (inFlight, seconds) => post(generator, '/closed', { id, inFlight, seconds }, seconds),
    close: () => post<unknown>(generator, '/close', { id }).then(() => undefined),
  };
}

export type OpenLoopRun = Awaited<ReturnType<typeof measuredOpenLoop>>;
export type CapacityRun = Awaited<ReturnType<typeof measuredClosedLoop>>;

/** One open-loop run at `rate`, with the server's CPU and the upstream's calls over it. */
export async function measuredOpenLoop(generator: LoadGenerator, rate: number, seconds: number, watch: Watch) {
  const before = watch.upstream ? await watch.upstream.stats() : undefined;
  const cpuBefore = watch.server?.cpuSeconds() ?? Number.NaN;
  const run = await generator.openLoop(rate, seconds);
  const answered = Math.max(1, run.scheduled - run.errors.connection - run.errors.timeouts);
  const serverCpuUs = (((watch.server?.cpuSeconds() ?? Number.NaN) - cpuBefore) / answered) * 1e6;
  const callsPerRequest = before && watch.upstream ? contractCalls(before, await watch.upstream.stats()) / run.scheduled : undefined;
  return { ...run, serverCpuUs, callsPerRequest };
}

export async function measuredClosedLoop(generator: LoadGenerator, inFlight: number, seconds: number, server: Child) {
  const cpuBefore = server.cpuSeconds();
  const run = await generator.closedLoop(inFlight, seconds);
  const used = server.cpuSeconds() - cpuBefore;
  // serverCores: near 1 when pinned to a core it had to itself, CPU bound.
  return { ...run, serverCores: used / run.seconds, serverCpuUs: (used / Math.max(1, run.answered)) * 1e6 };
}

export const toWire = (target: HttpTarget) => ({
  url: target.url,
  method: target.method,
  headers: target.headers,
  cases: target.cases.map((c) => ({ path: c.path, ...(c.body === undefined ? {} : { body: c.body }), check: c.check.toWire() })),
});

const fromWire = (wire: ReturnType<typeof toWire>): HttpTarget => ({
  ...wire,
  cases: wire.cases.map((c) => ({ ...c, check: BodyCheck.fromWire(c.check) })),
});

async function jsonOf(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

export function startLoadGeneratorServer(port: number, host: string): void {
  const generators = new Map<number, LoadGenerator>();
  let nextId = 1;
  const generator = (id: unknown): LoadGenerator => {
    const found = generators.get(Number(id));
    if (!found) throw new Error(`no target ${String(id)}`);
    return found;
  };
  const routes: Record<string, (body: Record<string, unknown>) => Promise<unknown>> = {
    '/targets': async (body) => {
      const id = nextId++;
      generators.set(id, loadGenerator(fromWire(body.target as ReturnType<typeof toWire>)));
      return { id };
    },
    '/open': (body) => generator(body.id).openLoop(Number(body.rate), Number(body.seconds)),
    '/closed': (body) => generator(body.id).closedLoop(Number(body.inFlight), Number(body.seconds)),
    '/pace': (body) => pace(body as unknown as PacerRun),
    '/close': async (body) => {
      await generator(body.id).close();
      generators.delete(Number(body.id));
      return {};
    },
  };
  createServer((req, res) => {
    const route = req.method === 'POST' ? routes[req.url ?? ''] : undefined;
    if (!route) return void res.writeHead(req.method === 'GET' && req.url === '/readyz' ? 200 : 404).end();
    jsonOf(req)
      .then(route)
      .then(
        (answer) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)),
        (error: unknown) => res.writeHead(500).end(String(error)),
      );
  }).listen(port, host);
}

// Run as a child's entry: serve the routes below on the PORT the harness gives, which probes GET /readyz.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  startLoadGeneratorServer(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
}
