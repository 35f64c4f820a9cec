import Opossum from 'opossum';
import { ClientGone, ErrorCode, isGatewayError } from '../../errors.js';
import { refuse } from '../../refusals/refusals.js';

/*
 * Stops calling an upstream that keeps failing: callers get a prompt
 * UPSTREAM_UNAVAILABLE instead of each waiting out a timeout, and the upstream
 * gets room to recover. The only file that knows opossum, so it can be swapped.
 */

export type BreakerState = 'closed' | 'open' | 'half-open';

/** Set from src/config/fixed.ts (the numbers and why); always on but where a test turns it off. */
export interface CircuitBreakerOptions {
  /**
   * The circuit opens when, within the last `windowMs`, more than this
   * percentage of calls failed and there were at least `minimumCalls` calls.
   */
  failureThresholdPercent: number;
  /**
   * Fewest calls in the window before the circuit may open at all, so a few
   * failures on a quiet gateway do not cut everyone off.
   */
  minimumCalls: number;
  /** Length of the rolling window over which calls and failures are counted, in ms. */
  windowMs: number;
  /** How long the circuit stays open before one probe call is let through (half-open). */
  resetTimeoutMs: number;
  /** When false, every call goes straight through and the circuit never opens. */
  enabled: boolean;
  /** Told of each change of state, for logs and metrics. */
  onStateChange?: (state: BreakerState) => void;
}

export interface CircuitBreaker {
  /** Runs `work` unless the circuit is open; then rejects at once with UPSTREAM_UNAVAILABLE. */
  run<T>(work: () => Promise<T>): Promise<T>;
  state(): BreakerState;
  /** Stops the breaker's timers; later calls are refused. */
  shutdown(): void;
}

// A refused, unknown or forbidden request is the caller's fault, and a call
// whose client left was stopped by us: neither says anything about the
// upstream's health, so they must never open the circuit.
const callerCodes = new Set<ErrorCode>([
  ErrorCode.NOT_FOUND,
  ErrorCode.UNAUTHENTICATED,
  ErrorCode.FORBIDDEN,
  ErrorCode.BAD_USER_INPUT,
  ErrorCode.RATE_LIMITED,
]);

function isCallerFault(error: unknown): boolean {
  if (error instanceof ClientGone) return true;
  if (!isGatewayError(error)) return false;
  const status = error.upstreamStatus;
  return callerCodes.has(error.code) || (status !== undefined && status >= 400 && status < 500);
}

function check(name: string, value: number, min: number, max = Number.POSITIVE_INFINITY): void {
  if (!Number.isFinite(value) || value < min || value > max)
    throw new RangeError(`circuit breaker ${name} must be between ${min} and ${max}, not ${value}`);
}

type Work = () => Promise<unknown>;

export function createCircuitBreaker(settings: CircuitBreakerOptions): CircuitBreaker {
  if (!settings.enabled) return { run: (work) => work(), state: () => 'closed', shutdown() {} };
  check('failureThresholdPercent', settings.failureThresholdPercent, 0, 100);
  check('minimumCalls', settings.minimumCalls, 0);
  // opossum rotates its window in tenths; below 10 ms that would be a busy timer.
  check('windowMs', settings.windowMs, 10);
  check('resetTimeoutMs', settings.resetTimeoutMs, 1);

  const breaker = new Opossum<[Work], unknown>((work) => work(), {
    // The upstream client already has a deadline per attempt; a second one here
    // would abandon GETs in the middle of their retries.
    timeout: false,
    errorThresholdPercentage: settings.failureThresholdPercent,
    volumeThreshold: settings.minimumCalls,
    rollingCountTimeout: settings.windowMs,
    resetTimeout: settings.resetTimeoutMs,
    errorFilter: isCallerFault,
    // Latency percentiles and snapshots are unused and cost a sort per failure.
    rollingPercentilesEnabled: false,
    enableSnapshots: false,
  });

  const tell = (state: BreakerState) => {
    // opossum emits inside its promise handlers: a throwing listener there
    // would leave the caller's promise unsettled forever.
    try {
      settings.onStateChange?.(state);
    } catch {
      /* a listener's bug must not wedge upstream calls */
    }
  };
  breaker.on('open', () => tell('open'));
  breaker.on('halfOpen', () => tell('half-open'));
  breaker.on('close', () => tell('closed'));

  return {
    async run<T>(work: () => Promise<T>): Promise<T> {
      try {
        return (await breaker.fire(work)) as T;
      } catch (error) {
        if (error instanceof Error && Opossum.isOurError(error)) {
          const code = (error as { code?: unknown }).code;
          if (code === 'ESHUTDOWN') throw refuse.upstreamClientClosed(error);
          throw refuse.circuitOpen(error);
        }
        throw error;
      }
    },
    state() {
      if (breaker.closed) return 'closed';
      if (breaker.halfOpen) return 'half-open';
      return 'open'; // also after shutdown: calls are refused either way
    },
    shutdown: () => breaker.shutdown(),
  };
}
