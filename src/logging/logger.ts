import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { YogaLogger } from 'graphql-yoga';
import type { LogLevel } from '../config/index.js';
import { traceFields } from '../tracing/tracing.js';

export type { Logger };

/**
 * Structured JSON logs on stdout; credentials never appear in them. With
 * `traceIds`, a line written while a span is active names its `trace_id` and
 * `span_id` (tracing on only: off, no line pays for the look-up).
 */
export function createLogger(level: LogLevel, { traceIds = false, destination }: { traceIds?: boolean; destination?: DestinationStream } = {}): Logger {
  const options: LoggerOptions = {
    level,
    ...(traceIds ? { mixin: () => traceFields() } : {}),
    base: { service: 'vending-gateway' },
    redact: { paths: ['authorization', 'headers.authorization', '*.authorization', 'webhookSecrets', '*.webhookSecrets', 'webhookAccountSecrets', '*.webhookAccountSecrets'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Yoga's own messages go through the same logger. */
export function yogaLogger(logger: Logger): YogaLogger {
  const forward = (level: 'debug' | 'info' | 'warn' | 'error') => (...args: unknown[]) => {
    const [first, ...rest] = args;
    if (first instanceof Error) logger[level]({ err: first }, first.message);
    else logger[level]({ details: rest.length > 0 ? rest : undefined }, String(first));
  };
  return { debug: forward('debug'), info: forward('info'), warn: forward('warn'), error: forward('error') };
}
