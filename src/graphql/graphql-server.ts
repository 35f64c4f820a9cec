import type { Caller } from '../backends/caller.js';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { useDeferStream } from '@graphql-yoga/plugin-defer-stream';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { QueryLimits } from '../config/config.js';
import { createContext, type GatewayContext, type GatewayServices } from './context.js';
import type { Logger } from '../logging/logger.js';
import { yogaLogger } from '../logging/logger.js';
import { useIncrementalMasking } from './use-incremental-masking.js';
import type { RequestScope } from '../http/request-scope.js';
import type { CountedOperation } from '../observability/metrics.js';
import { corsFor } from './cors.js';
import { schema } from './schema.js';
import { loadTrustedDocuments, useTrustedDocuments } from './trusted-documents.js';
import { inProcessQueries, PERSISTED_QUERY_TTL_MS, usePersistedQueries } from './persisted-queries.js';
import type { APQStore } from '@graphql-yoga/plugin-apq';
import { queryLimitRules } from './use-query-limits.js';
import { useSubscriptionRootCondition } from './subscription-root-rule.js';
import { rulePlugins, useTransportExecution, type OperationRules, type TransportExecution } from './operation-rules.js';
import { usePermissions } from './use-permissions.js';
import { useQueryStringParams } from './query-string-params.js';
import { useCompiledExecution } from './use-compiled-execution.js';
import { createGraphiQLPage, GRAPHIQL_FIRST_QUERY, type GraphiQLPage } from './graphiql-page.js';

/*
 * The yoga instance behind /graphql (HTTP and SSE through the front door,
 * WebSocket through the subscriptions transport): schema, the rules of
 * operation-rules.ts (limits, trusted documents, permissions, metrics,
 * tracing, masking) and the per-operation context, the same on every
 * transport.
 */

/** How yoga is told to mask errors (its `maskedErrors` option). */
export interface GraphQLMasking {
  errorMessage: string;
  isDev: boolean;
}

/**
 * yoga's server context: what an operation brings from its transport. An
 * HTTP request brings the front door's scope; a WebSocket operation the rest.
 * Every key a plugin keeps on it is declared here, and nowhere else.
 */
export interface GraphQLServerContext {
  /** The HTTP request's scope (request-scope.ts), handed to yoga by graphql-route.ts. */
  scope?: RequestScope | undefined;
  authorization?: string | undefined;
  /** The connection's `connectionParams.after`: where its subscriptions without an `after` of their own resume. */
  after?: unknown;
  /** The operation's connection, gone when its socket closed; shared subscriptions have none. */
  caller?: Caller | undefined;
  /** graphql-ws runs the operation itself once yoga's params stage passed it (operation-rules.ts). */
  execution?: TransportExecution | undefined;
  /** Set by the params rule that refused the operation (operation-rules.ts `refuseInParams`): later params hooks leave it be. */
  refusedInParams?: boolean | undefined;
  /** A WebSocket operation's metrics record (metrics.ts), kept here as an HTTP request's is in its scope. */
  counted?: CountedOperation | undefined;
}

export type GraphQLServer = YogaServerInstance<GraphQLServerContext, GatewayContext>;

export interface GraphQLServerOptions {
  path: string;
  services: GatewayServices;
  logger: Logger;
  limits: QueryLimits;
  masking: GraphQLMasking;
  /** Whether GraphiQL's page is served (GRAPHIQL); never with trusted documents only, which it could not use. */
  graphiql: boolean;
  /** Pre-filled in GraphiQL so it works at once locally; only the development key ever is. */
  devApiKey: string | undefined;
  /** Origins whose pages may call /graphql (CORS_ORIGINS). */
  corsOrigins: readonly string[];
  /** Queries and mutations run compiled (graphql-jit); benchmarks and tests compare both. */
  compiledExecution: boolean;
  /**
   * Whole results served again (response-cache.ts); last, so it keys documents trusted documents filled in and wraps compiled execution.
   */
  responseCache: Plugin | undefined;
  /** Where persisted queries' texts are registered (APQ), unless TRUSTED_DOCUMENTS=only. @default this process's bounded store */
  persistedQueries?: APQStore | undefined;
  /** Features' plugins (SSE ids, forward-mode key watch). */
  plugins: Plugin[];
  /** Features' plugins that must come after every other (a stream no result hook took is ended). @default [] */
  lastPlugins?: Plugin[];
  /** The metrics plugin (metrics.ts), first of the rules so that it names even a refused operation. */
  metrics?: Plugin | undefined;
  /** With tracing on (use-tracing.ts): after compiled execution, so resolvers run in the operation's span. @default [] */
  tracing?: Plugin[];
}

/**
 * yoga's CSRF prevention, but for a stream started with a subscription
 * token: it carries no credential a browser adds by itself (no cookie, no
 * key), so a cross-site page cannot start one without knowing the token, and
 * an EventSource cannot send the header the check asks for. Authorization is
 * required anyway; a request carrying it is never a "simple" cross-site one.
 */
function useCSRFRule(): Plugin {
  const csrf = useCSRFPrevention({ requestHeaders: ['authorization', 'x-graphql-yoga-csrf'] });
  return {
    onRequestParse: (payload) =>
      (payload.serverContext as GraphQLServerContext).scope?.bySubscriptionToken ? undefined : csrf.onRequestParse?.(payload),
  };
}

export function createGraphQLServer(options: GraphQLServerOptions): { yoga: GraphQLServer; graphiql: GraphiQLPage | undefined } {
  const trusted = options.limits.trustedDocuments === 'only' ? loadTrustedDocuments() : undefined;
  const graphiql = options.graphiql && !trusted ? createGraphiQLPage() : undefined;
  const rules: OperationRules = {
    metrics: options.metrics ? [options.metrics] : [],
    permissions: [usePermissions() as Plugin],
    'subscription-root': [useSubscriptionRootCondition()],
    ...queryLimitRules(options.limits),
    // One rule for documents by hash: the trusted ones only, or any the client registered (APQ).
    'trusted-documents': trusted
      ? [useTrustedDocuments(trusted)]
      : [usePersistedQueries(options.persistedQueries ?? inProcessQueries(PERSISTED_QUERY_TTL_MS))],
    tracing: options.tracing ?? [],
    // yoga's own (maskedErrors below) masks what execution throws and what is thrown before it; the parts of @defer and @stream, this.
    'error-masking': [useIncrementalMasking({ ...options.masking, logger: options.logger })],
  };
  const yoga = createYoga<GraphQLServerContext, GatewayContext>({
    schema,
    graphqlEndpoint: options.path,
    logging: yogaLogger(options.logger),
    landingPage: false,
    cors: corsFor(options.corsOrigins),
    batching: false,
    // The front door bounds every body as it arrives.
    maxRequestBodySize: false,
    // Never attach stacks or original messages, whatever NODE_ENV says.
    maskedErrors: { isDev: options.masking.isDev, errorMessage: options.masking.errorMessage },
    graphiql: graphiql
      ? {
          title: 'vending-gateway',
          defaultQuery: GRAPHIQL_FIRST_QUERY,
          headers: options.devApiKey ? JSON.stringify({ Authorization: options.devApiKey }) : undefined,
        }
      : false,
    // yoga's own page loads GraphiQL from a CDN; this one is served from the gateway (graphiql-page.ts).
    ...(graphiql ? { renderGraphiQL: graphiql.render } : {}),
    context: ({ request, scope, authorization, after, caller }) => {
      if (scope) {
        return createContext(options.services, {
          authorization: request.headers.get('authorization'),
          credential: scope.credential,
          requestId: scope.id,
          connectionAfter: request.headers.get('last-event-id'),
          scope,
        });
      }
      return createContext(options.services, { authorization, requestId: crypto.randomUUID(), connectionAfter: after, caller });
    },
    plugins: rulePlugins(
      rules,
      {
        // `@defer` and `@stream` (yoga's plugin: the directives and graphql-tools' incremental executor), before
        // compiled execution, which leaves such documents to it.
        'document-nesting': [useDeferStream(), useQueryStringParams(), ...options.plugins, useCSRFRule()],
        tracing: options.compiledExecution ? [useCompiledExecution()] : [],
      },
      // The response cache keys documents trusted documents filled in; the transport's execution takes over after every params hook.
      [...(options.responseCache ? [options.responseCache] : []), useTransportExecution(), ...(options.lastPlugins ?? [])],
    ),
  });
  return { yoga, graphiql };
}
