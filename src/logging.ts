import { pino, type Logger } from 'pino';
import type { YogaLogger } from 'graphql-yoga';
import type { LogLevel } from './config/index.js';

export type { Logger };

/** Structured JSON logs on stdout; credentials never appear in them. */
export function createLogger(level: LogLevel): Logger {
  return pino({
    level,
    base: { service: 'vending-gateway' },
    redact: { paths: ['authorization', 'headers.authorization', '*.authorization', 'webhookSecrets', '*.webhookSecrets'], censor: '[redacted]' },
  });
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
