import { context, propagation, ROOT_CONTEXT, trace, type Context, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';

/*
 * OpenTelemetry tracing, on only when an OTLP endpoint is configured (README
 * "Tracing"). Off, there is no `Tracing` object at all: every place that
 * could make a span holds `undefined` and skips it with one check, and the
 * SDK (sdk.ts) is never loaded. This file uses only the OpenTelemetry API,
 * which libraries are meant to depend on; the SDK behind it is loaded on start.
 */

/** What the SDK is started with (config's `tracing`). */
export interface TracingOptions {
  /** Where spans are posted (OTLP/HTTP, JSON). */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  /** OTEL_TRACES_SAMPLER's standard names. */
  sampler: 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';
  samplerRatio: number;
  /** Longest a finished span waits before its batch is sent. */
  exportDelayMs: number;
}

export interface Tracing {
  /** Spans made before `start()` resolves are not recorded (the API's proxy tracer). */
  readonly tracer: Tracer;
  /** Loads and registers the SDK: spans from now on are exported; where to, and failures to, are logged. */
  start(logger: Logger): Promise<void>;
  /** Sends the spans not yet exported, then unregisters the SDK. */
  shutdown(): Promise<void>;
}

/** Longest a stopping gateway waits for its last spans to be exported. */
const SHUTDOWN_FLUSH_MS = 2_000;

/** The name of this instrumentation (the tracer's), as the spans' scope. */
export const TRACER_NAME = 'vending-gateway';

export function createTracing(options: TracingOptions): Tracing {
  let release: Promise<() => Promise<void>> | undefined;
  return {
    tracer: trace.getTracer(TRACER_NAME),
    start: async (logger) => {
      release ??= import('./sdk.js').then((sdk) => sdk.acquireSdk(options, logger));
      await release;
    },
    async shutdown() {
      if (!release) return;
      const held = release;
      release = undefined;
      // The last spans are sent if the collector takes them at once; one that does not answer cannot hold a stop.
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS)));
      await Promise.race([(await held)(), waited]);
      clearTimeout(timer);
    },
  };
}

/** The W3C trace context of `ctx` (`traceparent`, and `tracestate` when there is one), as headers to send on. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context a `traceparent` (and `tracestate`) continues; the root context when there is none or it is malformed. */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** `trace_id` and `span_id` of the span of `ctx` (by default the active one), for log lines; nothing outside a span. */
export function traceFields(ctx: Context = context.active()): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(ctx);
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
