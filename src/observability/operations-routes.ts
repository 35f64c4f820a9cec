import type { Route } from '../http/front-door.js';

/*
 * What an operator's tooling polls: liveness (the process answers),
 * readiness (it can serve: not stopping, events storable, upstream not cut
 * off) and the Prometheus metrics. None needs a key.
 */

export interface OperationsRoutesOptions {
  ready(): boolean;
  renderMetrics(): Promise<string>;
  metricsContentType: string;
}

export function operationsRoutes({ ready, renderMetrics, metricsContentType }: OperationsRoutesOptions): Route[] {
  return [
    { method: 'GET', url: '/healthz', transport: 'probe', operation: 'GET /healthz', handler: () => ({ status: 'ok' }) },
    {
      method: 'GET',
      url: '/readyz',
      transport: 'probe',
      operation: 'GET /readyz',
      handler: (_request, reply) => (ready() ? { status: 'ready' } : reply.code(503).send({ status: 'not ready' })),
    },
    {
      method: 'GET',
      url: '/metrics',
      transport: 'metrics',
      operation: 'GET /metrics',
      handler: async (_request, reply) => reply.header('content-type', metricsContentType).send(await renderMetrics()),
    },
  ];
}
