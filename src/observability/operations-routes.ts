import type { FastifyRequest } from 'fastify';
import { refuse } from '../refusals/refusals.js';
import type { Route } from '../http/front-door.js';
import { secretMatcher } from '../http/secret-match.js';
import type { Readiness } from '../http/readiness.js';

/*
 * What an operator's tooling polls: liveness (the process answers),
 * readiness (it can serve: not stopping, events storable, upstream not cut
 * off; each check named in the answer) and the Prometheus metrics. The probes need no key; the metrics need
 * METRICS_TOKEN when it is set, and are served on a listener of their own
 * with METRICS_PORT (the operations plugin, src/app/plugins/operator-endpoints.ts).
 */

export interface ProbeRoutesOptions {
  /**
   * The checks readiness is made of, each added by the feature that knows it:
   * `accepting` (not shutting down), `events` (storable: always in process,
   * with Redis while it answers), `upstream` (the circuit breaker not open).
   */
  readiness: Readiness;
}

export interface MetricsRouteOptions {
  renderMetrics(): Promise<string>;
  metricsContentType: string;
  /** When set, a scrape must send `Authorization: Bearer <token>`. */
  token: string | undefined;
}

export function probeRoutes({ readiness }: ProbeRoutesOptions): Route[] {
  return [
    { method: 'GET', url: '/healthz', transport: 'probe', operation: 'GET /healthz', handler: () => ({ status: 'ok' }) },
    {
      method: 'GET',
      url: '/readyz',
      transport: 'probe',
      operation: 'GET /readyz',
      handler: (_request, reply) => {
        // Which check fails tells an operator where to look; it names no host, key or address.
        const checks = readiness.checks();
        return readiness.ready() ? { status: 'ready', checks } : reply.code(503).send({ status: 'not ready', checks });
      },
    },
  ];
}

/** The front door's guard for /metrics: the bearer token, before anything is rendered. */
function tokenGuard(token: string): (request: FastifyRequest) => void {
  const isToken = secretMatcher([token]);
  return (request) => {
    const header = request.headers.authorization;
    const presented = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim())?.[1] : undefined;
    if (presented === undefined || !isToken(presented)) {
      throw refuse.metricsTokenMissing();
    }
  };
}

export function metricsRoute({ renderMetrics, metricsContentType, token }: MetricsRouteOptions): Route {
  return {
    method: 'GET',
    url: '/metrics',
    transport: 'metrics',
    operation: 'GET /metrics',
    ...(token ? { guard: tokenGuard(token) } : {}),
    handler: async (_request, reply) => reply.header('content-type', metricsContentType).send(await renderMetrics()),
  };
}
