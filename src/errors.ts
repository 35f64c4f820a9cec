import { GraphQLError } from 'graphql';

/**
 * The catalogue: every code a client can receive, in GraphQL's
 * `extensions.code` (REST answers derive their status from it, so the two
 * transports never disagree about a failure), with the HTTP status of an
 * answer refused with it. The names are public; code elsewhere refers to
 * them as `ErrorCode.NAME`, never as text (test/unit/error-codes.test.ts).
 */
const catalogue = {
  UNAUTHENTICATED: { status: 401 },
  FORBIDDEN: { status: 403 },
  NOT_FOUND: { status: 404 },
  BAD_USER_INPUT: { status: 400 },
  UPSTREAM_ERROR: { status: 502 },
  UPSTREAM_TIMEOUT: { status: 504 },
  UPSTREAM_UNAVAILABLE: { status: 502 },
  RATE_LIMITED: { status: 429 },
  /** A subscription asked to resume after an event the log no longer holds; only ever a subscription's result, so no status. */
  EVENTS_EXPIRED: { status: undefined },
  /** With TRUSTED_DOCUMENTS=only: a request that sends a document's text instead of its hash. */
  PERSISTED_QUERY_ONLY: { status: 400 },
  /** A hash that names no trusted document (TRUSTED_DOCUMENTS=only), or no registered persisted query (Apollo's APQ). */
  PERSISTED_QUERY_NOT_FOUND: { status: 400 },
  /** A persisted query's text sent with a hash that is not its own (APQ): nothing is registered. */
  PERSISTED_QUERY_MISMATCH: { status: 400 },
  /** yoga's own: a request it cannot read as GraphQL parameters (a body that is no object, `variables` not an object, a batch). */
  BAD_REQUEST: { status: 400 },
  /** yoga's own: a document of several operations and no `operationName`, or one that names none of them. */
  OPERATION_RESOLUTION_FAILURE: { status: 400 },
  /** yoga's own, on the masked answer ("Unexpected error."): what failed is in the log, never in the answer. */
  INTERNAL_SERVER_ERROR: { status: 500 },
} as const satisfies Record<string, { status: number | undefined }>;

export type ErrorCode = keyof typeof catalogue;

/** Each code by name, for code that sets or compares one. */
export const ErrorCode = Object.freeze(Object.fromEntries(Object.keys(catalogue).map((code) => [code, code]))) as {
  readonly [C in ErrorCode]: C;
};

/** Every code of the catalogue. */
export const ERROR_CODES = Object.keys(catalogue) as readonly ErrorCode[];

/** The HTTP status of an answer refused with `code`; undefined for a code only a subscription's result carries. */
export const httpStatusOf = (code: ErrorCode): number | undefined => catalogue[code].status;

export interface GatewayErrorOptions {
  /** Status the upstream answered with, kept so REST passthrough can repeat a 4xx verbatim. */
  upstreamStatus?: number;
  cause?: unknown;
  /**
   * Set when the error fails a whole GraphQL request (authentication, rate
   * limits): yoga answers with the code's HTTP status instead of 200. Field
   * errors never do, so a partial result keeps its 200.
   */
  failsRequest?: boolean;
  /** HTTP headers to send with a request-failing error (e.g. `Retry-After`). */
  headers?: Record<string, string>;
  /** More `extensions` for the client, e.g. which limit was reached. */
  extensions?: Record<string, unknown>;
}

/** An expected failure: its message is safe to show to the client. */
export class GatewayError extends GraphQLError {
  readonly code: ErrorCode;
  readonly upstreamStatus: number | undefined;
  /** HTTP headers that go with this error's answer (e.g. `Retry-After`). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    const http = options.failsRequest ? { http: { status: httpStatusOf(code) ?? 500, headers: options.headers } } : {};
    // The cause is kept apart from `originalError`: yoga masks any error whose
    // original is not a GraphQLError, and this one is expected.
    super(message, { extensions: { ...options.extensions, code, ...http } });
    this.cause = options.cause;
    this.code = code;
    this.upstreamStatus = options.upstreamStatus;
    this.headers = options.headers ?? {};
  }

  /** The REST status: an upstream 4xx is repeated as sent, anything else follows the code. */
  get httpStatus(): number {
    const upstream = this.upstreamStatus;
    if (upstream !== undefined && upstream >= 400 && upstream < 500) return upstream;
    return httpStatusOf(this.code) ?? 500;
  }
}

export function isGatewayError(value: unknown): value is GatewayError {
  return value instanceof GatewayError;
}

/** The contract's error envelope (part 7): `{errors: {message}}`. */
export interface ErrorEnvelope {
  errors: { message: string };
}

export function errorEnvelope(message: string): ErrorEnvelope {
  return { errors: { message } };
}

/** The one answer to an unexpected failure, on every route and transport (yoga's masking too): what failed is in the log. */
export const MASKED_MESSAGE = 'Unexpected error.';

/**
 * Status and body for any thrown value on a REST route. Unexpected errors are
 * masked: their text and stack never reach the client.
 */
export function toRestError(error: unknown): { status: number; body: ErrorEnvelope; headers: Record<string, string> } {
  if (isGatewayError(error)) {
    return { status: error.httpStatus, body: errorEnvelope(error.message), headers: error.headers };
  }
  return { status: 500, body: errorEnvelope(MASKED_MESSAGE), headers: {} };
}

/**
 * The reason a request's abort signal carries: its client went away, so
 * nobody will read the answer. Work stopped for it says nothing about the
 * upstream's health (the circuit breaker ignores it).
 */
export class ClientGone extends Error {
  constructor() {
    super('The client went away before its answer');
    this.name = 'ClientGone';
  }
}

/** Most characters of client input an error message quotes; the rest becomes `…`. */
export const QUOTED_INPUT_CHARS = 64;

/** Client input as an error message quotes it: JSON-quoted, at most a short prefix. */
export function quoted(input: string): string {
  return input.length <= QUOTED_INPUT_CHARS ? JSON.stringify(input) : `${JSON.stringify(input.slice(0, QUOTED_INPUT_CHARS))}…`;
}

/** A quoted run (graphql-js quotes names and values with `"`, escaping quotes inside) longer than the prefix. */
const LONG_QUOTED = new RegExp(`"((?:[^"\\\\]|\\\\.){${QUOTED_INPUT_CHARS}})(?:[^"\\\\]|\\\\.)+"`, 'g');
/** Longest message of ours a client gets; only text quoted from its own input can make one longer. */
const MAX_MESSAGE_CHARS = 1_024;

/**
 * A message worded by a library that quotes client input whole (graphql-js
 * quotes values, names and enum values it refuses), shortened: every quoted
 * run to its prefix, then the whole to a bound. Short messages pass as they are.
 */
export function withShortQuotes(message: string): string {
  if (message.length <= 2 * QUOTED_INPUT_CHARS) return message;
  const shortened = message.replace(LONG_QUOTED, '"$1"…');
  return shortened.length <= MAX_MESSAGE_CHARS ? shortened : `${shortened.slice(0, MAX_MESSAGE_CHARS)}…`;
}
