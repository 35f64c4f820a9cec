import { destination as fileDestination, pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { YogaLogger } from 'graphql-yoga';
import type { LogLevel } from '../config/config.js';
import { traceFields } from '../tracing/tracing.js';

export type { Logger };

/**
 * Structured JSON logs on stdout; credentials never appear in them. With
 * `traceIds`, a line written while a span is active names its `trace_id` and
 * `span_id` (tracing on only: off, no line pays for the look-up).
 */
export function createLogger(
  level: LogLevel,
  { traceIds = false, destination }: { traceIds?: boolean; destination?: DestinationStream } = {},
): Logger {
  const options: LoggerOptions = {
    level,
    ...(traceIds ? { mixin: () => traceFields() } : {}),
    base: { service: 'vending-gateway' },
    redact: {
      paths: [
        'authorization',
        'headers.authorization',
        '*.authorization',
        'webhookSecrets',
        '*.webhookSecrets',
        'webhookAccountSecrets',
        '*.webhookAccountSecrets',
      ],
      censor: '[redacted]',
    },
  };
  return pino(options, destination ?? stdoutLines());
}

/**
 * Standard output written asynchronously: a line is handed to the kernel as
 * soon as the write before it finished, and lines that arrive meanwhile go
 * in one write. Writing each line synchronously (pino's default) cost a
 * request-log line a system call of its own, about as much CPU as answering
 * a cached request. pino writes what is left when the process exits (an
 * exception included); a process killed with SIGKILL can lose the lines of
 * its last write in flight.
 */
function stdoutLines(): DestinationStream {
  return fileDestination({ dest: process.stdout.fd ?? 1, sync: false });
}

/** Yoga's own messages go through the same logger. */
export function yogaLogger(logger: Logger): YogaLogger {
  const forward =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (...args: unknown[]) => {
      const [first, ...rest] = args;
      if (first instanceof Error) logger[level]({ err: first }, first.message);
      else logger[level]({ details: rest.length > 0 ? rest : undefined }, String(first));
    };
  return { debug: forward('debug'), info: forward('info'), warn: forward('warn'), error: forward('error') };
}

type LevelMethod = 'info' | 'error' | 'debug' | 'fatal' | 'warn' | 'trace';

/**
 * A request's logger (the front door gives one to every request, bound to its
 * id), made into pino's child only when a line is first written through it:
 * most requests write none but the request line, and making a child (its
 * bindings serialized and redacted) was a few percent of a cached answer.
 */
export class LazyChildLogger {
  #made: FastifyLikeLogger | undefined;
  constructor(
    private readonly parent: FastifyLikeLogger,
    private readonly bindings: Record<string, unknown>,
    private readonly options: Record<string, unknown>,
  ) {}

  private get made(): FastifyLikeLogger {
    return (this.#made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.#made?.level ?? this.parent.level;
  }
  set level(level: string) {
    this.made.level = level;
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}
  child(bindings: Record<string, unknown>, options?: Record<string, unknown>): FastifyLikeLogger {
    return this.made.child(bindings, options);
  }

  private write(method: LevelMethod, args: unknown[]): void {
    (this.made[method] as (...a: unknown[]) => void)(...args);
  }
}

/** The part of pino's Logger Fastify asks of a request's logger. */
export interface FastifyLikeLogger {
  level: string;
  info: (...args: never[]) => void;
  error: (...args: never[]) => void;
  debug: (...args: never[]) => void;
  fatal: (...args: never[]) => void;
  warn: (...args: never[]) => void;
  trace: (...args: never[]) => void;
  silent: (...args: never[]) => void;
  child(bindings: Record<string, unknown>, options?: Record<string, unknown>): FastifyLikeLogger;
}
