import { context, diag, DiagLogLevel, propagation, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { TracingOptions } from './tracing.js';

/*
 * The OpenTelemetry SDK, loaded only when tracing is on (tracing.ts imports
 * this file on start). Its globals (tracer provider, AsyncLocalStorage context
 * manager, W3C propagator) are one per process: a second gateway in the same
 * process (tests) shares the first one's, and the last to stop unregisters them.
 */

let shared: { provider: NodeTracerProvider; users: number } | undefined;

/** OTEL_TRACES_SAMPLER's values, as the SDK defines them. */
function samplerOf({ sampler, samplerRatio }: TracingOptions): Sampler {
  const ratio = new TraceIdRatioBasedSampler(samplerRatio);
  switch (sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** How often the same SDK complaint (a collector that does not answer, say) is logged at most. */
const COMPLAINT_EVERY_MS = 60_000;

/** The SDK's own warnings and errors (export failures above all) as log lines, each kind at most once a minute. */
function complainTo(logger: Logger): void {
  const lastSaid = new Map<string, number>();
  const say = (message: string, ...args: unknown[]) => {
    const now = Date.now();
    if (now - (lastSaid.get(message) ?? -Infinity) < COMPLAINT_EVERY_MS) return;
    lastSaid.set(message, now);
    const err = args.find((arg): arg is Error => arg instanceof Error);
    logger.warn({ err: err && { message: err.message } }, `tracing: ${message}`);
  };
  const quiet = () => {};
  diag.setLogger({ error: say, warn: say, info: quiet, debug: quiet, verbose: quiet }, DiagLogLevel.WARN);
}

/** Registers the SDK (once per process) and returns what releases this user's hold on it. */
export function acquireSdk(options: TracingOptions, logger: Logger): () => Promise<void> {
  if (!shared) {
    complainTo(logger);
    logger.info(
      { endpoint: options.url, sampler: options.sampler, serviceName: options.serviceName },
      'tracing on: spans are exported over OTLP/HTTP',
    );
    const exporter = new OTLPTraceExporter({ url: options.url, headers: options.headers });
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName }),
      sampler: samplerOf(options),
      spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: options.exportDelayMs })],
    });
    // The global tracer provider, an AsyncLocalStorage context manager and the W3C trace context propagator.
    provider.register();
    shared = { provider, users: 0 };
  }
  const held = shared;
  held.users += 1;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    held.users -= 1;
    if (held.users > 0) return void (await held.provider.forceFlush());
    if (shared === held) shared = undefined;
    await held.provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
    diag.disable();
  };
}
