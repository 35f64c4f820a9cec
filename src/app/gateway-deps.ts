import type { Backend } from '../backends/backend.js';
import type { Logger } from '../logging/logger.js';

/** Parts a test or benchmark may supply instead of the ones the configuration would pick. */
export interface GatewayDeps {
  /** @default the backend named by `config.backend` */
  backend?: Backend;
  /** @default a JSON logger at `config.logLevel` */
  logger?: Logger;
  /** Fast paths only a benchmark switches off, to show what each is worth (bench/lib/gateway-main.ts). */
  fastPaths?: {
    /** Concurrent identical reads under the same key share one backend call. @default true */
    coalesce?: boolean;
    /** WebSocket subscribers with the same document, variables and key share one execution per event. @default true */
    subscriptionSharing?: boolean;
    /** Plain GraphQL queries run through yoga's engine without its Fetch adapter (graphql-route.ts). @default true */
    graphqlFastPath?: boolean;
    /** Queries and mutations run compiled by graphql-jit (use-compiled-execution.ts). @default true */
    compiledExecution?: boolean;
    /** A query or mutation run compiled before runs from its plan on the HTTP fast path (operation-plans.ts). @default true */
    plans?: boolean;
    /** With CACHE_TTL_MS, whole GraphQL results are kept too (graphql/response-cache.ts). @default true */
    responseCache?: boolean;
  };
}
