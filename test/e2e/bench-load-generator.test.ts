import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyCheck } from '../../bench/lib/expect.js';
import { remoteGenerator, startLoadGeneratorServer } from '../../bench/lib/load-generator.js';
import { allowedCpus, planPlacement } from '../../bench/lib/pinning.js';

/*
 * S8's load generator runs in a process of its own and rebuilds the targets'
 * checks there from JSON. Here its server runs in this process against a
 * small HTTP server whose answers are known: the checks must still tell a
 * right body from a wrong one, and the runs must count what was sent.
 */

const listening = (server: Server): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

let target: Server;
let targetUrl: string;
let generatorUrl: string;
let served = 0;

beforeAll(async () => {
  // /good answers {"a":1}, what every check here expects; /bad answers {"a":2}.
  target = createServer((req, res) => {
    served += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end(req.url === '/good' ? '{"a":1}' : '{"a":2}');
  });
  targetUrl = `http://127.0.0.1:${await listening(target)}`;
  // The generator's server as its child entry starts it, on a free port found the same way.
  const probe = createServer();
  const port = await listening(probe);
  await new Promise((resolve) => probe.close(resolve));
  startLoadGeneratorServer(port, '127.0.0.1');
  generatorUrl = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries += 1) {
    const ok = await fetch(`${generatorUrl}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok || tries > 50) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
});

afterAll(() => new Promise<void>((resolve) => target.close(() => resolve())));

const generatorChild = () => ({
  name: 'generator',
  pid: process.pid,
  url: generatorUrl,
  port: 0,
  output: () => '',
  cpuSeconds: () => Number.NaN,
  signal: () => {},
  stop: async () => {},
});

describe("S8's load generator process", () => {
  it('checks answers with checks rebuilt from JSON, exact bytes or by content', async () => {
    const exact = await remoteGenerator(generatorChild(), {
      url: targetUrl,
      method: 'GET',
      headers: {},
      cases: [{ path: '/good', check: BodyCheck.exact('{"a":1}') }],
    });
    const byContent = await remoteGenerator(generatorChild(), {
      url: targetUrl,
      method: 'GET',
      headers: {},
      cases: [
        { path: '/good', check: new BodyCheck({ a: 1 }) },
        { path: '/bad', check: new BodyCheck({ a: 1 }) },
      ],
    });
    const before = served;
    const right = await exact.openLoop(200, 0.5);
    expect(right.scheduled).toBe(100);
    expect(right.errors.total).toBe(0);
    expect(right.p50).toBeGreaterThan(0);
    const mixed = await byContent.openLoop(200, 0.5);
    // Cases rotate: every second request asks /bad, whose answer is not what its check expects.
    expect(mixed.errors.mismatches).toBe(50);
    expect(mixed.errors.total).toBe(50);
    expect(served - before).toBe(200);
    await Promise.all([exact.close(), byContent.close()]);
  });

  it('runs a closed loop for its time and counts only the right answers', async () => {
    const generator = await remoteGenerator(generatorChild(), {
      url: targetUrl,
      method: 'GET',
      headers: {},
      cases: [{ path: '/good', check: new BodyCheck({ a: 1 }) }],
    });
    const run = await generator.closedLoop(4, 0.3);
    expect(run.answered).toBeGreaterThan(0);
    expect(run.errors.total).toBe(0);
    expect(run.rps).toBeCloseTo(run.answered / run.seconds, 6);
    await generator.close();
  });

  it('answers 500 for a target it does not hold', async () => {
    const response = await fetch(`${generatorUrl}/open`, { method: 'POST', body: JSON.stringify({ id: 999, rate: 1, seconds: 1 }) });
    expect(response.status).toBe(500);
    expect(await response.text()).toContain('no target 999');
  });
});

describe("S8's placement", () => {
  it('runs unpinned when asked, and says so, with the priorities still raised', () => {
    const plan = planPlacement(false);
    expect(plan.pinned).toBe(false);
    expect(plan.text).toContain('UNPINNED (BENCH_S8_PIN=off)');
    expect(plan.server).toEqual({ nice: -10 });
    expect(plan.generator.cpus).toBeUndefined();
  });

  it('pins the server and the load to two different cores this process may use', () => {
    const cpus = allowedCpus() ?? [];
    const plan = planPlacement(true);
    if (!plan.pinned) {
      // A machine that cannot pin must say why.
      expect(plan.text).toMatch(/^UNPINNED \((taskset|this process may use|the usable cores)/);
      return;
    }
    expect(plan.server.cpus).not.toBe(plan.generator.cpus);
    expect(plan.upstream.cpus).toBe(plan.generator.cpus);
    expect(cpus).toContain(Number(plan.server.cpus));
    expect(cpus).toContain(Number(plan.generator.cpus));
  });
});
