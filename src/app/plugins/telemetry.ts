import fp from 'fastify-plugin';
import type { Logger } from '../../logging/logger.js';
import { createMetrics, UNAUTHENTICATED, type GatewayMetrics } from '../../observability/metrics.js';
import type { Tracing } from '../../tracing/tracing.js';

/*
 * Tracing and metrics come first after the shutdown: every later feature may
 * start spans and count into the metrics, and the spans of a close are
 * flushed last (this plugin's onClose runs after every other feature's).
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when an OTLP endpoint is; undefined means no span is ever started. */
    tracing: Tracing | undefined;
    metrics: GatewayMetrics;
  }
}

export const tracingPlugin = fp<{ tracing: Tracing | undefined }>(
  async (app, { tracing }) => {
    app.decorate('tracing', tracing);
    if (!tracing) return;
    // Loaded only now, and only with tracing on; spans start with the first request.
    await tracing.start(app.log as Logger);
    app.addHook('onClose', async () => tracing.shutdown());
  },
  { name: 'tracing' },
);

export const metricsPlugin = fp(
  async (app) => {
    const metrics = createMetrics({ readiness: app.readiness });
    app.decorate('metrics', metrics);
    app.addHook('onResponse', (request, reply, done) => {
      const { config: route } = request.routeOptions;
      const transport = route.transport ?? 'rest';
      // Scrapes are not traffic: counting them would make every scrape change what it reads.
      if (transport !== 'metrics') {
        // A request without a valid key chooses no label: its series exist from the start.
        const keyless = route.guard !== undefined && request.scope?.credential === undefined;
        const operation = keyless ? UNAUTHENTICATED : transport === 'graphql' ? request.scope?.operation : (route.operation ?? 'other');
        metrics.answered({ transport, operation }, reply.statusCode, request.scope?.graphqlErrors ?? false, reply.elapsedTime / 1000);
      }
      done();
    });
  },
  { name: 'metrics' },
);
