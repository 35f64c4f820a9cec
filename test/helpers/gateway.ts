import type { FastifyInstance } from 'fastify';
import type { InjectOptions } from 'light-my-request';
import { pino } from 'pino';
import { loadConfig, type Config, type UpstreamConfig } from '../../src/config/config.js';
import { spec } from '../../src/config/spec.js';
import { createGateway, type Gateway, type GatewayDeps } from '../../src/app/gateway.js';
import { createMemoryBackend, type MemoryBackend } from '../../src/backends/memory/memory-backend.js';

export const TEST_KEY = 'test-key-1';
export const OTHER_KEY = 'test-key-2';

export interface RunningGateway {
  /** Where the gateway answers: a real address, or (answeringGateway) a name that only `fetch` below reaches. */
  url: string;
  /** Sends a request to the gateway: over the socket, or through `app.inject()` when the gateway listens on none. */
  fetch: typeof fetch;
  /** Where /metrics is served when METRICS_PORT is set. */
  metricsUrl?: string | undefined;
  gateway: Gateway;
  close(): Promise<void>;
}

/** The memory backend a gateway started with the defaults makes, for a test that hands one in (GatewayDeps.backend) or uses it alone. */
export const demoBackend = (): MemoryBackend => createMemoryBackend({ productsValues: loadConfig({}).productsValues });

type UpstreamChanges = Partial<Omit<UpstreamConfig, 'breaker' | 'keyCheck'>> & {
  breaker?: Partial<UpstreamConfig['breaker']>;
  keyCheck?: Partial<UpstreamConfig['keyCheck']>;
};

/** A `tune` for startGateway that changes the REST upstream's settings (BACKEND=rest), e.g. `tuneUpstream({ retries: 0 })`. */
export const tuneUpstream =
  ({ breaker, keyCheck, ...changes }: UpstreamChanges) =>
  (config: Config): Config => {
    const { upstream } = config;
    if (!upstream) throw new Error('tuneUpstream: the gateway has no REST upstream (BACKEND=rest)');
    return {
      ...config,
      upstream: { ...upstream, ...changes, breaker: { ...upstream.breaker, ...breaker }, keyCheck: { ...upstream.keyCheck, ...keyCheck } },
    };
  };

/**
 * Forward mode's environment: BACKEND=rest and no UPSTREAM_API_KEY, so each
 * client's own key (without an optional `Bearer `) goes to `upstreamUrl`, which judges it.
 */
export const forwardModeEnv = (upstreamUrl: string): Record<string, string> => ({ BACKEND: 'rest', UPSTREAM_URL: upstreamUrl });

/**
 * `tune` that reads the machines every `ms` for `vendingUpdated`, below the
 * second VENDING_POLL_MS allows (each read is the whole fleet): a test waits
 * for several reads, and a real service is not read. Set VENDING_POLL_MS too
 * (any accepted value) so that the environment says polling is on.
 */
export const pollVendingsEvery =
  (ms: number) =>
  (config: Config): Config => ({ ...config, vendingPollMs: ms });

/** A gateway in forward mode in front of `upstreamUrl`; `env` is layered over it. */
export const startForwardGateway = (
  upstreamUrl: string,
  env: Record<string, string> = {},
  deps: GatewayDeps = {},
  tune?: (config: Config) => Config,
): Promise<RunningGateway> => startGateway({ ...forwardModeEnv(upstreamUrl), ...env }, deps, tune);

/**
 * Starts a real gateway on a free loopback port; `env` is layered over test
 * defaults. `tune` changes the Config read from it: for the values that are
 * not variables (src/config/fixed.ts), e.g. a shorter shutdown deadline.
 * The machines are not read for `vendingUpdated` unless a test sets
 * VENDING_POLL_MS: the reads would join the upstream calls tests count.
 */
export async function startGateway(
  env: Record<string, string> = {},
  deps: GatewayDeps = {},
  tune: (config: Config) => Config = (config) => config,
): Promise<RunningGateway> {
  const gateway = buildGateway(env, deps, tune);
  const { url, metricsUrl } = await gateway.listen();
  return { url, metricsUrl, gateway, fetch: globalThis.fetch, close: () => gateway.close() };
}

/** The address an answering gateway's `url` names: nothing listens there, `fetch` alone reaches it. */
const NO_SOCKET = 'http://gateway.invalid';

/**
 * A gateway with every feature started but no socket, for tests that check
 * answers: its `fetch` sends each request through `app.inject()`, so it passes
 * the whole front door (hooks, guards, body limit, error handler) without a
 * port or the machine's network stack. A test whose point is the socket
 * (streams, WebSocket, keep-alive, a client library) starts one with startGateway.
 */
export async function answeringGateway(
  env: Record<string, string> = {},
  deps: GatewayDeps = {},
  tune: (config: Config) => Config = (config) => config,
): Promise<RunningGateway> {
  const gateway = buildGateway(env, deps, tune);
  try {
    await gateway.app.ready();
  } catch (error) {
    await gateway.app.close().catch(() => {});
    throw error;
  }
  return { url: NO_SOCKET, gateway, fetch: injectFetch(gateway.app), close: () => gateway.close() };
}

function buildGateway(env: Record<string, string>, deps: GatewayDeps, tune: (config: Config) => Config): Gateway {
  // A variable the gateway does not read would be ignored, and the test would quietly test the defaults.
  const unknown = Object.keys(env).filter((name) => !Object.hasOwn(spec, name));
  if (unknown.length > 0)
    throw new Error(
      `startGateway: the gateway reads no ${unknown.join(', ')} (src/config/spec.ts); ` +
        `fast paths only a benchmark switches are GatewayDeps.fastPaths, other values startGateway's tune`,
    );
  const config = tune(
    loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      API_KEYS: `${TEST_KEY},${OTHER_KEY}`,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_SECOND: '0',
      SHUTDOWN_GRACE_MS: '0',
      VENDING_POLL_MS: '0',
      ...env,
    }),
  );
  return createGateway(config, { logger: pino({ level: 'silent' }), ...deps });
}

/** Statuses whose answer has no body, which a Response may not be given. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** `fetch` over Fastify's `inject`: the request as a client would send it, the answer as fetch would give it. */
export function injectFetch(app: FastifyInstance): typeof fetch {
  return async (input, init = {}) => {
    const request = new Request(input instanceof URL || typeof input === 'string' ? new URL(String(input), NO_SOCKET) : input, init);
    const url = new URL(request.url);
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const answer = await app.inject({
      method: request.method as InjectOptions['method'],
      url: url.pathname + url.search,
      headers: Object.fromEntries(request.headers),
      ...(body ? { payload: body } : {}),
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) for (const one of [value ?? []].flat()) headers.append(name, String(one));
    return new Response(NULL_BODY.has(answer.statusCode) ? null : new Uint8Array(answer.rawPayload), {
      status: answer.statusCode,
      headers,
    });
  };
}
