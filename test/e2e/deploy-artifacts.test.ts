import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { spec } from '../../src/config/spec.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * deploy/ is what an operator copies: the Grafana dashboard and the alert
 * rules must name metrics the gateway exports, with labels it sets (a
 * renamed metric would leave a panel empty and an alert silent, never red);
 * the Dockerfile must run the gateway as it is meant to run, from the
 * built files alone (no sources, no build tools); the compose
 * file must parse and set only variables the gateway reads.
 */

const DEPLOY = new URL('../../deploy/', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, DEPLOY), 'utf8');
/** Labels Prometheus adds to every series it scrapes (and `le`, a histogram bucket's). */
const TARGET_LABELS = new Set(['instance', 'job', 'le']);

interface Rule {
  alert?: string;
  expr: string;
}

function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(read('grafana/dashboard.json')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
    templating: { list: Array<{ definition?: string }> };
  };
  const targets = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
  const variables = dashboard.templating.list.flatMap((variable) => (variable.definition ? [variable.definition] : []));
  return [...targets, ...variables];
}

function alertRules(): Rule[] {
  const rules = parseYaml(read('prometheus/alerts.yaml')) as { groups: Array<{ rules: Rule[] }> };
  return rules.groups.flatMap((group) => group.rules);
}

/** Each vending_gateway_* name an expression reads, with the labels it selects on or groups by. */
function metricsNamed(expression: string): Map<string, Set<string>> {
  const named = new Map<string, Set<string>>();
  const names = [...expression.matchAll(/\bvending_gateway_[a-z0-9_]+/g)].map((match) => match[0]);
  // `by (…)` groups whatever the expression reads: each label must belong to one of its metrics.
  const grouped = [...expression.matchAll(/\bby\s*\(([^)]*)\)/g)].flatMap((match) => match[1]!.split(',').map((label) => label.trim()));
  for (const name of names) named.set(name, new Set(named.get(name)));
  for (const match of expression.matchAll(/\b(vending_gateway_[a-z0-9_]+)\{([^}]*)\}/g)) {
    for (const label of match[2]!.matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)) named.get(match[1]!)!.add(label[1]!);
  }
  return new Map([...named].map(([name, labels]) => [name, new Set([...labels, ...grouped.map((label) => `by:${label}`)])]));
}

/** Prometheus text → metric name → the label names its samples carry. */
function exported(text: string): Map<string, Set<string>> {
  const metrics = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (!match) continue;
    const labels = metrics.get(match[1]!) ?? new Set<string>();
    for (const label of (match[2] ?? '').matchAll(/(\w+)="/g)) labels.add(label[1]!);
    metrics.set(match[1]!, labels);
  }
  return metrics;
}

describe('Grafana dashboard and alert rules against a running gateway', () => {
  let upstream: StandInUpstream;
  let running: RunningGateway;
  let metrics: Map<string, Set<string>>;

  beforeAll(async () => {
    upstream = await startStandInUpstream();
    running = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: 'upstream-key' });
    // Traffic on every kind of route, so labelled series exist: GraphQL, REST, the upstream, a webhook, a probe.
    expect((await postGraphQL(running.url, 'query Fleet { vendings { totalCount } }')).status).toBe(200);
    expect((await fetch(`${running.url}/vendings`, { headers: { authorization: TEST_KEY } })).status).toBe(200);
    const transaction = upstream.transactions[0] as { transactionId: string; products: never[] };
    const webhook = buildWebhookRequest({
      form: 'enveloped',
      id: 'deploy-1',
      transaction: { transactionId: transaction.transactionId, status: 'completed', products: transaction.products },
    });
    expect((await fetch(`${running.url}/webhooks`, { method: 'POST', headers: webhook.headers, body: webhook.body })).status).toBe(200);
    await fetch(`${running.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"event":"order"}' });
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    metrics = exported(await (await fetch(`${running.url}/metrics`)).text());
  });
  afterAll(async () => {
    await running?.close();
    await upstream?.close();
  });

  const sources: Array<[string, () => string[]]> = [
    ['deploy/grafana/dashboard.json', dashboardExpressions],
    ['deploy/prometheus/alerts.yaml', () => alertRules().map((rule) => rule.expr)],
  ];
  it.each(sources)('%s names only exported metrics, by labels they carry', (_file, expressions) => {
    const named = expressions().map(metricsNamed);
    const names = new Set(named.flatMap((each) => [...each.keys()]));
    expect(names.size).toBeGreaterThan(4);
    for (const each of named) {
      for (const [name, labels] of each) {
        expect(metrics.has(name), `${name} is not exported`).toBe(true);
        const grouped = [...labels].filter((label) => label.startsWith('by:')).map((label) => label.slice(3));
        for (const label of [...labels].filter((label) => !label.startsWith('by:'))) {
          expect(TARGET_LABELS.has(label) || metrics.get(name)!.has(label), `${name} has no label ${label}`).toBe(true);
        }
        for (const label of grouped) {
          const someMetricHasIt = [...each.keys()].some((other) => metrics.get(other)?.has(label));
          expect(TARGET_LABELS.has(label) || someMetricHasIt, `no metric of "${[...each.keys()].join(', ')}" has the label ${label}`).toBe(
            true,
          );
        }
      }
    }
  });

  it('alerts on the error ratio, p99 latency, an open upstream circuit and readiness', () => {
    const rules = alertRules();
    expect(rules.every((rule) => rule.alert && rule.expr)).toBe(true);
    const reads = (metric: string) => rules.some((rule) => rule.expr.includes(metric));
    expect(reads('vending_gateway_requests_total{transport!="probe", outcome="5xx"}')).toBe(true);
    expect(reads('histogram_quantile(0.99')).toBe(true);
    expect(reads('vending_gateway_upstream_circuit_open')).toBe(true);
    expect(reads('vending_gateway_ready')).toBe(true);
  });
});

/** The Dockerfile's instructions, continuation lines joined and comments left out. */
function dockerInstructions(text: string): string[] {
  const joined = text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n')
    .replace(/\\\n\s*/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

describe('Dockerfile', () => {
  const instructions = dockerInstructions(read('Dockerfile'));
  const stages = instructions.filter((line) => /^FROM\s/.test(line));
  const runtime = instructions.slice(instructions.findLastIndex((line) => /^FROM\s/.test(line)));

  it('builds in one stage and runs from another, as an unprivileged user, the way npm start does', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(instructions.some((line) => /^RUN npm ci\b/.test(line))).toBe(true);
    expect(instructions.some((line) => /npm run build/.test(line))).toBe(true);
    expect(runtime.some((line) => /^COPY --from=\S+ \S*dist\b/.test(line))).toBe(true);
    const user = runtime.findLast((line) => /^USER\s/.test(line))?.split(/\s+/)[1];
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    expect(runtime.findLast((line) => /^CMD\s/.test(line))).toBe('CMD ["node", "dist/main.js"]');
  });

  it('checks its health with node against /healthz (no curl in a slim image)', () => {
    const check = runtime.findLast((line) => /^HEALTHCHECK\s/.test(line)) ?? '';
    expect(check).toMatch(/ CMD \["node", "-e", .*\/healthz/);
    expect(check).not.toMatch(/\bcurl\b|\bwget\b/);
  });

  /** The runtime stage's `COPY --from=<stage> /app/<source> ./<target>`, as [source, target] (target '' for ./). */
  const copies = runtime.flatMap((line) => {
    const match = /^COPY\s+--from=\S+\s+\/app\/(\S+?)\/?\s+\.\/(\S*?)\/?$/.exec(line);
    return match ? [[match[1]!, match[2]!] as const] : [];
  });

  it('runs from the production install alone: package.json, node_modules, dist/, schema/, migrations/ (no sources)', () => {
    expect(copies.map(([source]) => source).sort()).toEqual(['dist', 'migrations', 'node_modules', 'package.json', 'schema']);
  });

  describe('a gateway started from only the files the runtime stage copies', () => {
    const ROOT = fileURLToPath(new URL('../../', import.meta.url));
    /** Only a safety net against a hung child; nothing here measures speed. */
    const GIVE_UP_MS = 30_000;
    let home: string;

    beforeAll(() => {
      home = mkdtempSync(join(tmpdir(), 'vending-gateway-image-'));
      for (const [source, target] of copies) {
        // The installed packages are linked, not copied: that dist/ needs only `dependencies` is production-install.test.ts's check.
        if (source === 'node_modules') symlinkSync(join(ROOT, source), join(home, target || source), 'dir');
        else cpSync(join(ROOT, source), join(home, target || source), { recursive: true });
      }
    });
    afterAll(() => rmSync(home, { recursive: true, force: true }));

    it(
      'starts with node dist/main.js and serves the dashboard, GraphiQL and a query',
      async () => {
        const child = spawn(process.execPath, ['dist/main.js'], {
          cwd: home,
          env: {
            PATH: process.env.PATH ?? '',
            NODE_ENV: 'production',
            PORT: '0',
            HOST: '127.0.0.1',
            API_KEYS: 'image-key',
            WEBHOOK_UNSIGNED: 'allow',
            GRAPHIQL: 'on',
            SIMULATOR: 'off',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const giveUp = setTimeout(() => child.kill('SIGKILL'), GIVE_UP_MS);
        const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        const url = await new Promise<string | undefined>((done) => {
          child.stdout.on('data', (chunk: Buffer) => {
            stdout += chunk.toString('utf8');
            const found = /"url":"(http:\/\/[^"]+)"/.exec(stdout)?.[1];
            if (found) done(found);
          });
          void exited.then(() => done(undefined));
        });
        try {
          expect(url, stderr).toBeDefined();
          const page = await fetch(`${url}/`);
          expect(page.status).toBe(200);
          expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'none'; script-src 'self'/);
          expect(await page.text()).toContain('<link rel="stylesheet" href="/dashboard/styles.css">');
          for (const [path, type] of [
            ['/dashboard/app.js', 'text/javascript'],
            ['/dashboard/styles.css', 'text/css'],
          ] as const) {
            const asset = await fetch(`${url}${path}`);
            expect(asset.status, path).toBe(200);
            expect(asset.headers.get('content-type')).toMatch(new RegExp(`^${type};`));
            expect((await asset.text()).length).toBeGreaterThan(100);
          }

          const graphiql = await fetch(`${url}/graphql`, { headers: { accept: 'text/html' } });
          expect(graphiql.status).toBe(200);
          const script = /src="(\/graphiql\/[^"]+\/graphiql\.js)"/.exec(await graphiql.text())?.[1];
          expect(script).toBeDefined();
          expect((await fetch(`${url}${script}`)).status).toBe(200);

          const query = await postGraphQL(url!, '{ vendings { totalCount } }', { key: 'image-key' });
          expect(query.status).toBe(200);
          expect(query.body).toEqual({ data: { vendings: { totalCount: expect.any(Number) } } });
        } finally {
          child.kill('SIGTERM');
          await exited;
          clearTimeout(giveUp);
        }
      },
      GIVE_UP_MS + 5_000,
    );
  });
});

describe('compose.yaml', () => {
  const compose = parseYaml(read('compose.yaml'), { merge: true }) as {
    services: Record<
      string,
      { build?: { context: string; dockerfile: string }; environment?: Record<string, string>; volumes?: string[]; depends_on?: unknown }
    >;
  };
  const gateways = Object.entries(compose.services).filter(([, service]) => service.build);

  it('runs two gateways sharing one Redis, built from deploy/Dockerfile', () => {
    expect(gateways.map(([name]) => name)).toEqual(['gateway-a', 'gateway-b']);
    expect(compose.services.redis).toBeDefined();
    for (const [, gateway] of gateways) {
      expect(existsSync(new URL(`${gateway.build!.context}/${gateway.build!.dockerfile}`, DEPLOY))).toBe(true);
      expect(gateway.environment?.REDIS_URL).toBe('redis://redis:6379');
      expect(gateway.environment?.NODE_ENV).toBe('production');
    }
  });

  it('sets only variables the gateway reads (a misspelt one would be ignored)', () => {
    for (const [name, gateway] of gateways) {
      const unknown = Object.keys(gateway.environment ?? {}).filter((variable) => !Object.hasOwn(spec, variable));
      expect(unknown, name).toEqual([]);
    }
  });

  it('mounts files that exist, and Prometheus loads the alert rules', () => {
    for (const service of Object.values(compose.services)) {
      for (const volume of service.volumes ?? []) expect(existsSync(new URL(volume.split(':')[0]!, DEPLOY)), volume).toBe(true);
    }
    const prometheus = parseYaml(read('prometheus/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string }>;
    };
    expect(prometheus.rule_files.map((file) => file.split('/').at(-1))).toEqual(['alerts.yaml']);
    expect(prometheus.scrape_configs.map((job) => job.job_name)).toEqual(['vending-gateway']);
  });
});
