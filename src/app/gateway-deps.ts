import type { Backend } from '../backends/backend.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';

/** Parts a test or benchmark may supply instead of the ones the configuration would pick. */
export interface GatewayDeps {
  /** @default the backend named by `config.backend` */
  backend?: Backend;
  /** @default a JSON logger at `config.logLevel` */
  logger?: Logger;
  /**
   * The memory backend's demo starts with an hour of dated sales in its history (src/backends/memory/demo-hour.ts),
   * as `npm start` does, so a first look at the dashboard shows a filled hour; only with the simulator on and the
   * history in process (a shared store would take a demo's sales for real ones). Tests start without it.
   * @default false
   */
  demoHour?: boolean;
  /** Fast paths only a benchmark switches off, to show what each is worth (bench/lib/gateway-main.ts). */
  fastPaths?: {
    /** Concurrent identical reads under the same key share one backend call. @default true */
    coalesce?: boolean;
    /** WebSocket subscribers with the same document, variables and key share one execution per event. @default true */
    subscriptionSharing?: boolean;
    /** Queries and mutations run compiled by graphql-jit (use-compiled-execution.ts). @default true */
    compiledExecution?: boolean;
    /** With CACHE_TTL_MS, whole GraphQL results are kept too (graphql/response-cache.ts). @default true */
    responseCache?: boolean;
  };
}

/** How far back the demo's first hour of sales reaches (demo-hour.ts dates them within it). */
export const DEMO_HOUR_MS = 3_600_000;

/**
 * Whether this gateway starts with the demo's hour of sales (`demoHour`): the memory backend of the configuration,
 * with its simulator, and a history in this process only.
 */
export const seedsDemoHour = (config: Config, deps: GatewayDeps): boolean =>
  deps.demoHour === true &&
  deps.backend === undefined &&
  config.backend === 'memory' &&
  config.simulator.mode !== 'off' &&
  config.history !== undefined &&
  config.redis === undefined &&
  config.databaseUrl === undefined;
