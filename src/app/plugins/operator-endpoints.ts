import type { AddressInfo } from 'node:net';
import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import { errorEnvelope } from '../../errors.js';
import { refusalMessage } from '../../refusals/transport-refusals.js';
import { createFrontDoor, registerRoutes, type FrontDoorOptions } from '../../http/front-door.js';
import type { Logger } from '../../logging/logger.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import { metricsRoute, probeRoutes } from '../../observability/operations-routes.js';

/*
 * What an operator's tooling polls: /healthz, /readyz and /metrics. With
 * METRICS_PORT the metrics are served on a listener of their own (same front
 * door: request id, body limit, token guard, masking), scraped until the end
 * of a shutdown and closed last of all.
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** Where /metrics is served when METRICS_PORT gives it a listener of its own. */
    metricsUrl(): string | undefined;
  }
}

/** What every listener of the gateway shares: its bounds, its log, how it masks and what it answers off its routes. */
export const frontDoorOptions = (config: Config, logger: Logger): FrontDoorOptions => ({
  logger,
  maxBodyBytes: config.maxBodyBytes,
  requestTimeoutMs: config.requestTimeoutMs,
  headersTimeoutMs: config.headersTimeoutMs,
  stopMs: config.shutdownGraceMs + config.shutdownTimeoutMs,
  upstreamCallsPerRequest: config.upstreamCallsPerRequest,
  onMasked: (error, request) => request.log.error({ err: error }, 'unexpected error'),
  notFound: (request, reply) =>
    reply.code(404).send(errorEnvelope(refusalMessage.noRoute(request.method, request.url.split('?', 1)[0] ?? ''))),
});

/** The host as it stands in a URL: an IPv6 address in brackets. */
export const urlHost = (host: string): string => (host.includes(':') ? `[${host}]` : host);

const metricsRouteOf = (config: Config, metrics: GatewayMetrics) =>
  metricsRoute({ renderMetrics: () => metrics.render(), metricsContentType: metrics.contentType, token: config.metrics.token });

export const operationsPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    registerRoutes(app, probeRoutes({ readiness: app.readiness }));
    const port = config.metrics.port;
    if (port === undefined) {
      registerRoutes(app, [metricsRouteOf(config, app.metrics)]);
      app.decorate('metricsUrl', () => undefined);
      return;
    }
    const listener = createFrontDoor(frontDoorOptions(config, app.log as Logger));
    registerRoutes(listener, [metricsRouteOf(config, app.metrics)]);
    // Bound while the gateway starts, so a port it cannot have stops the start.
    await listener.listen({ port, host: config.host });
    app.addHook('onClose', () => listener.close());
    const url = `http://${urlHost(config.host)}:${(listener.server.address() as AddressInfo).port}/metrics`;
    app.decorate('metricsUrl', () => url);
  },
  { name: 'operations', dependencies: ['metrics'] },
);
