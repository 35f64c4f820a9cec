import type { GraphQLError } from 'graphql';
import type { OnParamsEventPayload, Plugin } from 'graphql-yoga';
import type { GraphQLServerContext } from './graphql-server.js';

/*
 * The rules every GraphQL operation passes, whatever carried it: HTTP and
 * SSE (yoga's handler, graphql-route.ts) and graphql-ws. The yoga instance is
 * built from this list (graphql-server.ts), and there is no other way onto
 * every transport: graphql-ws enters yoga through `getResultForParams`,
 * yoga's own params stage (its `onParams` hooks, then envelop's parse,
 * validate, execute and subscribe), as yoga's handler does, and only takes
 * over once the params stage passed the operation (`useTransportExecution`):
 * to share one execution among its subscribers (shared-subscriptions.ts). A
 * rule added here therefore holds on every transport;
 * test/e2e/one-pipeline.test.ts refuses a rule without a violating example
 * tried on each, in every request shape.
 */

/** The rules, in the order yoga runs their plugins. */
export const OPERATION_RULES = [
  /** Counts each operation: HTTP and SSE by the front door, WebSocket ones by the plugin (metrics.ts). */
  'metrics',
  /** The operation type's permission (use-permissions.ts). */
  'permissions',
  /** Brackets and JSON nesting, before anything recursive reads them (use-query-limits.ts). */
  'document-nesting',
  /** A subscription's one root field without @skip / @include (subscription-root-rule.ts). */
  'subscription-root',
  /** GraphQL Armor: depth, aliases, directives, tokens. */
  'query-limits',
  /** MAX_COST with the variables known (operation-cost.ts). */
  'max-cost',
  /** INTROSPECTION=off. */
  'introspection',
  /** A code on every error, quotes cut short, INTROSPECTION=off's hints taken out. */
  'error-codes',
  /** TRUSTED_DOCUMENTS=only (trusted-documents.ts). */
  'trusted-documents',
  /** Spans of parse, validate and execution (use-tracing.ts), with tracing on. */
  'tracing',
  /** Unexpected errors masked: yoga's own `maskedErrors`, which also masks errors thrown before execution. */
  'error-masking',
] as const;

export type OperationRuleName = (typeof OPERATION_RULES)[number];

/** Each rule's yoga plugins (none when the configuration turns it off). */
export type OperationRules = Record<OperationRuleName, Plugin[]>;

/**
 * The plugins of a yoga instance: the rules in their order, with the plugins
 * that are no rule (features, CSRF, execution strategies) placed before the
 * rule they must precede, and `last` at the end.
 */
export function rulePlugins(rules: OperationRules, before: Partial<Record<OperationRuleName, Plugin[]>>, last: Plugin[]): Plugin[] {
  return [...OPERATION_RULES.flatMap((name) => [...(before[name] ?? []), ...rules[name]]), ...last];
}

/**
 * A transport that executes operations itself (graphql-ws, to share
 * subscriptions) passes this in the server context of `getResultForParams`;
 * it gets the operation once every params hook has passed it, with the
 * parameters they left (a trusted document's text), and does what yoga's
 * own handler would: envelop's parse, validate, context, execute or subscribe.
 */
export type TransportExecution = NonNullable<Parameters<OnParamsEventPayload['setParamsHandler']>[0]>;

/** Hands the operation to the transport's execution, when its server context carries one; last of every params hook. */
export function useTransportExecution(): Plugin {
  return {
    onParams({ context, setParamsHandler }) {
      const { execution } = context as GraphQLServerContext;
      if (execution) setParamsHandler(execution as never);
    },
  };
}

/**
 * Refuses an operation in the params stage: the error is its result, set rather than thrown, so the result hooks
 * (metrics) see it on every transport. A later params hook that answers from what it holds (the response cache)
 * must not answer in its place: it asks `refusedInParams` first. yoga checks the parameters after every hook and would
 * answer a request without a text (one sent by its hash alone) in words of its own instead: the refused request is
 * given an empty one.
 */
export function refuseInParams(
  payload: Pick<OnParamsEventPayload, 'context' | 'params' | 'setResult' | 'setParams'>,
  error: GraphQLError,
): void {
  (payload.context as GraphQLServerContext).refusedInParams = true;
  payload.setResult({ errors: [error] });
  payload.setParams({ ...payload.params, query: '' });
}

export const refusedInParams = (context: object): boolean => (context as GraphQLServerContext).refusedInParams === true;
