import { resolve } from 'node:path';
import type { GatewayDeps } from '../../src/app/gateway-deps.js';
import { spec } from '../../src/config/spec.js';
import { sleep, spawnNode, type Child, type Placement } from './children.js';
import { UPSTREAM_KEY } from './contract-upstream.js';

export const CLIENT_KEY = 'bench-key';

/**
 * createGateway's fast paths and CACHE_TTL_MS; each absent: the gateway's own default (coalescing, sharing, compiled
 * execution on, cache off, the response cache on: it acts only with CACHE_TTL_MS).
 */
export type Variant = NonNullable<GatewayDeps['fastPaths']> & { cacheTtlMs?: number };

export type Upstream = Awaited<ReturnType<typeof startUpstream>>;

export async function startUpstream({ delayMs = 0, placement = {} }: { delayMs?: number; placement?: Placement } = {}) {
  const child = await spawnNode({
    name: delayMs > 0 ? `contract upstream (answers after ${delayMs} ms)` : 'contract upstream',
    entry: 'bench/lib/contract-upstream.ts',
    args: delayMs > 0 ? [`--delay-ms=${delayMs}`] : [],
    ready: '/__ready',
    ...placement,
  });
  return {
    ...child,
    stats: async () => (await (await fetch(`${child.url}/__stats`)).json()) as Record<string, number>,
  };
}

/** Sum of the contract calls (not 401s or unknown paths) in a stats delta. */
export function contractCalls(before: Record<string, number>, after: Record<string, number>): number {
  let total = 0;
  for (const [route, n] of Object.entries(after)) if (route.includes('/')) total += n - (before[route] ?? 0);
  return total;
}

/** What the bench's gateways run with, as deployed (layers-main.ts assembles S9's from it too). */
export const gatewayEnv = (upstreamUrl: string) => ({
  // As deployed, and as the Apollo peer runs: graphql-js skips its development-only checks.
  NODE_ENV: 'production',
  // The bench's webhook senders (bench/lib/webhooks.ts) do not sign.
  WEBHOOK_UNSIGNED: 'allow',
  BACKEND: 'rest',
  UPSTREAM_URL: upstreamUrl,
  UPSTREAM_API_KEY: UPSTREAM_KEY,
  API_KEYS: CLIENT_KEY,
  LOG_LEVEL: 'silent',
  RATE_LIMIT_PER_SECOND: '0',
});

export async function startGateway(
  upstreamUrl: string,
  variant: Variant,
  extraEnv: Record<string, string> = {},
  placement: Placement = {},
): Promise<Child> {
  const { cacheTtlMs, ...fastPaths } = variant;
  return spawnNode({
    name: `gateway ${JSON.stringify(variant)}`,
    entry: 'bench/lib/gateway-main.ts',
    args: [JSON.stringify(fastPaths)],
    env: {
      // Every configuration variable unset first, so the shell cannot change a variant.
      ...Object.fromEntries(Object.keys(spec).map((name) => [name, undefined])),
      ...gatewayEnv(upstreamUrl),
      CACHE_TTL_MS: cacheTtlMs === undefined ? undefined : String(cacheTtlMs),
      ...(process.env.BENCH_OTLP_ENDPOINT ? { OTEL_EXPORTER_OTLP_ENDPOINT: process.env.BENCH_OTLP_ENDPOINT } : {}),
      ...extraEnv,
    },
    nodeFlags: ['--expose-gc', ...cpuProfile()],
    ...placement,
  });
}

/** BENCH_CPU_PROF=<folder>: each gateway child writes its V8 CPU profile there when it stops (children.ts waits longer for it). */
const cpuProfile = () => (process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${resolve(process.env.BENCH_CPU_PROF)}`] : []);

/** A GraphQL document POSTed to a gateway's /graphql (or a peer's `path`) with the client key: the answer's status and body. */
export async function askGateway(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
  { path = '/graphql', timeoutMs = 60_000 } = {},
) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: CLIENT_KEY },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: response.status, text: await response.text() };
}

/** S7's peers: each a child process over the same upstream, with the same client key check (bench/peers/). */
export const PEERS = {
  apollo: { name: 'Apollo Server 5 + RESTDataSource', entry: 'bench/peers/apollo/main.ts', path: '/' },
  mercurius: { name: 'Mercurius 16 (jit) on Fastify 5', entry: 'bench/peers/mercurius/main.ts', path: '/graphql' },
  hive: { name: 'Hive Gateway runtime 2 + OpenAPI source', entry: 'bench/peers/hive/main.ts', path: '/graphql' },
} as const;
export type PeerName = keyof typeof PEERS;

export async function startPeer(peer: PeerName, upstreamUrl: string): Promise<Child> {
  const { name, entry, path } = PEERS[peer];
  return spawnNode({
    name,
    entry,
    env: { UPSTREAM_URL: upstreamUrl, UPSTREAM_API_KEY: UPSTREAM_KEY, API_KEYS: CLIENT_KEY, NODE_ENV: 'production' },
    ready: async (url) => (await askGateway(url, '{ __typename }', undefined, { path, timeoutMs: 1_000 })).status === 200,
  });
}

/** S1's floor: a bare Node proxy hop to the upstream (bare-hop-main.ts); `placement`: its core and priority, as S8 places the gateway. */
export async function startBareHop(upstreamUrl: string, placement: Placement = {}): Promise<Child> {
  return spawnNode({
    name: 'bare proxy hop',
    entry: 'bench/lib/bare-hop-main.ts',
    env: { UPSTREAM_URL: upstreamUrl, UPSTREAM_API_KEY: UPSTREAM_KEY },
    ...placement,
  });
}

export async function startRawWs(): Promise<Child> {
  return spawnNode({ name: 'raw ws broadcaster', entry: 'bench/lib/raw-ws-main.ts' });
}

export type MemoryReading = Awaited<ReturnType<typeof memoryAfterGc>>;

/** A gateway's RSS and V8 heap used, read from /metrics after forced GCs (SIGUSR2, see child-preload.ts): live data, not garbage. */
export async function memoryAfterGc(gateway: Child) {
  for (let k = 0; k < 3; k += 1) {
    gateway.signal('SIGUSR2');
    await sleep(400);
  }
  return { rss: await metric(gateway, 'process_resident_memory_bytes'), heap: await metric(gateway, 'nodejs_heap_size_used_bytes') };
}

/** Garbage collections a gateway has run so far, all kinds together (prom-client's nodejs_gc_duration_seconds), and how many took over 1 ms and 10 ms. */
export type GcTotals = Awaited<ReturnType<typeof gcTotals>>;

export async function gcTotals(child: Child) {
  const text = await (await fetch(`${child.url}/metrics`)).text();
  const sum = (pattern: RegExp) => [...text.matchAll(pattern)].reduce((total, m) => total + Number(m[1]), 0);
  const count = sum(/^nodejs_gc_duration_seconds_count\{[^}]*\} ([0-9.eE+-]+)$/gm);
  const within = (le: string) => sum(new RegExp(`^nodejs_gc_duration_seconds_bucket\\{(?=[^}]*le="${le}")[^}]*\\} ([0-9.eE+-]+)$`, 'gm'));
  return {
    count,
    seconds: sum(/^nodejs_gc_duration_seconds_sum\{[^}]*\} ([0-9.eE+-]+)$/gm),
    over1ms: count - within('0.001'),
    over10ms: count - within('0.01'),
  };
}

/** Reads one unlabelled sample of a Prometheus metric from the child's /metrics. */
export async function metric(child: Child, name: string): Promise<number> {
  const text = await (await fetch(`${child.url}/metrics`)).text();
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}
