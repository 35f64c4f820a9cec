import { createServer, type IncomingMessage } from 'node:http';
import { BodyCheck, type BodyCheckWire } from './expect.js';
import type { HttpTarget } from './http-load.js';
import { loadGenerator, type LoadGenerator } from './open-loop.js';
import { pace, type PacerRun } from './webhook-pacer.js';

/** An HttpTarget as JSON: its checks as BodyCheckWire. */
export interface WireTarget {
  url: string;
  method: HttpTarget['method'];
  headers: Record<string, string>;
  cases: Array<{ path: string; body?: string; check: BodyCheckWire }>;
}

export const toWire = (target: HttpTarget): WireTarget => ({
  url: target.url,
  method: target.method,
  headers: target.headers,
  cases: target.cases.map((c) => ({ path: c.path, ...(c.body === undefined ? {} : { body: c.body }), check: c.check.toWire() })),
});

const fromWire = (wire: WireTarget): HttpTarget => ({
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
      generators.set(id, loadGenerator(fromWire(body.target as WireTarget)));
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
