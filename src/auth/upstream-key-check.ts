import { SYSTEM_IDENTITY, type Backend } from '../backends/backend.js';
import type { Config } from '../config/config.js';
import { ErrorCode, type GatewayError, isGatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';
import { createCheckLimit, createVerdicts, keyDigest, type CheckLimit } from './upstream-verdicts.js';

/*
 * Forward mode (no UPSTREAM_API_KEY): the upstream is the only judge of a
 * client's key, and the live feed makes no upstream call of its own, so the
 * gateway asks the upstream once per key and period before it serves the key.
 * Verdicts, accepted and refused alike, are remembered for `ttlMs` under a
 * hash of the key, at most `maxEntries` of them; concurrent checks of one key
 * share one call; and the instance starts at most `checksPerSecond` checks in
 * any one second, so a flood of made-up keys is not a flood upstream (that
 * mechanism is upstream-verdicts.ts, which the account verdicts use too). A
 * key with open subscriptions is checked again every period, and its watchers
 * are told when the upstream refuses it.
 */

export interface UpstreamKeyCheckOptions {
  /** One cheap upstream call made with `authorization`: resolves when accepted, rejects with the upstream's GatewayError. */
  probe(authorization: string): Promise<unknown>;
  /** How long a verdict is remembered, and how often watched keys are checked again (30 s: fixed.ts forwardKeyTtlMs). */
  ttlMs: number;
  /**
   * Most checks started in any one second (sliding), for the whole instance; re-checks of watched keys are not limited
   * (src/config/fixed.ts).
   */
  checksPerSecond: number;
  /**
   * The instance's limit, when other upstream checks count against it too (account-access.ts); by default one of its own of
   * `checksPerSecond`.
   */
  limit?: CheckLimit | undefined;
  /** Most verdicts remembered; past it the least recently used is forgotten. @default 10000 */
  maxEntries?: number;
  /** @default Date.now */
  now?: () => number;
}

export interface UpstreamKeyCheck {
  /**
   * Resolves when the upstream accepts the key. Otherwise throws a
   * request-failing GatewayError: UNAUTHENTICATED or FORBIDDEN when the
   * upstream refused it (`isRefusal`), RATE_LIMITED over the instance's
   * check limit, or the upstream's failure (no verdict, retryable).
   */
  check(authorization: string): Promise<void>;
  /**
   * Keeps the key checked every period while watched; `onRefused` is called
   * once should the upstream refuse it. A check that gets no verdict leaves
   * the watch as it is. Returns the function that ends the watch.
   */
  watch(authorization: string, onRefused: (error: GatewayError) => void): () => void;
  /** Stops the re-check timers. */
  close(): void;
}

type RefusalCode = typeof ErrorCode.UNAUTHENTICATED | typeof ErrorCode.FORBIDDEN;
type Verdict = { accepted: true } | { accepted: false; code: RefusalCode; message: string; status: number | undefined };

const refusalCodes: ReadonlySet<ErrorCode> = new Set<RefusalCode>([ErrorCode.UNAUTHENTICATED, ErrorCode.FORBIDDEN]);
/** Failures a client may retry as they are; any other answer to the check is the upstream's fault. */
const passedOnCodes: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.UPSTREAM_TIMEOUT,
  ErrorCode.UPSTREAM_UNAVAILABLE,
  ErrorCode.UPSTREAM_ERROR,
  ErrorCode.RATE_LIMITED,
]);

/** Whether an error of `check` says the upstream refused the key (as opposed to "try again"). */
export const isRefusal = (error: unknown): boolean => isGatewayError(error) && refusalCodes.has(error.code);

/** The refusal as a client sees it: the upstream's status and message, failing the whole request. */
function refusalError(verdict: Extract<Verdict, { accepted: false }>, failsRequest: boolean): GatewayError {
  return refuse.keyRefusedAgain(verdict.code, verdict.message, verdict.status, failsRequest);
}

function noVerdict(error: unknown): unknown {
  if (!isGatewayError(error)) return error;
  return passedOnCodes.has(error.code) ? refuse.keyCheckFailed(error) : refuse.keyCheckOddAnswer(error);
}

export function createUpstreamKeyCheck(options: UpstreamKeyCheckOptions): UpstreamKeyCheck {
  const { probe, ttlMs, checksPerSecond, maxEntries = 10_000, now = Date.now } = options;
  const verdicts = createVerdicts<Verdict>({ ttlMs, maxEntries, now, limit: options.limit ?? createCheckLimit(checksPerSecond, now) });
  const watched = new Map<
    string,
    { authorization: string; listeners: Set<(error: GatewayError) => void>; timer: NodeJS.Timeout | undefined }
  >();

  /** The upstream's verdict on a key, asking it (once for all who ask meanwhile); throws when there is none. */
  function ask(key: string, authorization: string, limited: boolean): Promise<Verdict> {
    const judge = () =>
      probe(authorization).then(
        (): Verdict => ({ accepted: true }),
        (error: unknown): Verdict => {
          if (isGatewayError(error) && refusalCodes.has(error.code)) {
            return { accepted: false, code: error.code as RefusalCode, message: error.message, status: error.upstreamStatus };
          }
          throw noVerdict(error);
        },
      );
    return verdicts.ask(key, judge, limited);
  }

  async function check(authorization: string): Promise<void> {
    const key = keyDigest(authorization);
    const verdict = verdicts.get(key) ?? (await ask(key, authorization, true));
    if (!verdict.accepted) throw refusalError(verdict, true);
  }

  /** The next re-check of a watched key: when the verdict it holds runs out. */
  function schedule(key: string): void {
    const watch = watched.get(key);
    if (!watch) return;
    const remaining = verdicts.remainingMs(key);
    const delay = remaining > 0 ? remaining : ttlMs;
    watch.timer = setTimeout(() => void recheck(key), delay);
    watch.timer.unref();
  }

  async function recheck(key: string): Promise<void> {
    const watch = watched.get(key);
    if (!watch) return;
    let verdict: Verdict | undefined;
    try {
      verdict = await ask(key, watch.authorization, false);
    } catch {
      verdict = undefined; // No verdict: the feed stays until one comes.
    }
    if (watched.get(key) !== watch) return;
    if (verdict?.accepted === false) {
      watched.delete(key);
      for (const listener of watch.listeners) listener(refusalError(verdict, false));
      return;
    }
    schedule(key);
  }

  return {
    check,
    watch(authorization, onRefused) {
      const key = keyDigest(authorization);
      let watch = watched.get(key);
      if (!watch) {
        watch = { authorization, listeners: new Set(), timer: undefined };
        watched.set(key, watch);
        schedule(key);
      }
      const current = watch;
      current.listeners.add(onRefused);
      return () => {
        current.listeners.delete(onRefused);
        if (current.listeners.size > 0 || watched.get(key) !== current) return;
        clearTimeout(current.timer);
        watched.delete(key);
      };
    },
    close() {
      for (const watch of watched.values()) clearTimeout(watch.timer);
      watched.clear();
    },
  };
}

/**
 * The key check of a gateway in forward mode (none otherwise). It asks
 * `GET /vendings` in the flat view: the contract's one read that needs no id,
 * so any key the upstream accepts may make it. `backend` is the REST backend
 * itself (breaker, concurrency limit, metrics), not the entity cache, which
 * could answer for a key revoked since; concurrent checks of a key are
 * shared here.
 */
export function createForwardKeyCheck(config: Config, backend: Backend): UpstreamKeyCheck | undefined {
  if (!config.forwardMode || !config.upstream) return undefined;
  const products = config.productsValues.flat === '' ? undefined : config.productsValues.flat;
  return createUpstreamKeyCheck({
    ...config.upstream.keyCheck,
    probe: (authorization) => backend.listVendings({ products }, { authorization, identity: SYSTEM_IDENTITY }),
  });
}
