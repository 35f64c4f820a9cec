import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { permissionFor, requirePermission } from '../auth/permissions.js';
import type { GatewayContext } from './context.js';
import { isGatewayError } from '../errors.js';

/*
 * Each GraphQL operation needs its type's permission (auth/permissions.ts):
 * a query `read`, a subscription `subscribe`, a mutation `pay`. Checked once
 * per operation where every transport passes (envelop's execute and
 * subscribe: HTTP, SSE, graphql-ws), before anything runs; a refused
 * operation answers one FORBIDDEN error and no data. Ahead of compiled
 * execution; the response cache, which answers before execution, serves
 * only identities that may read (response-cache.ts).
 */

function refusal(
  context: GatewayContext,
  args: { document: Parameters<typeof getOperationAST>[0]; operationName?: string | null | undefined },
) {
  const operation = getOperationAST(args.document, args.operationName);
  // No operation to run: graphql-js words that failure itself.
  if (!operation) return undefined;
  try {
    requirePermission(context.credential, permissionFor[operation.operation]);
    return undefined;
  } catch (error) {
    if (isGatewayError(error)) return { errors: [error] };
    throw error;
  }
}

export function usePermissions(): Plugin<GatewayContext> {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const refused = refusal(args.contextValue, args);
      if (refused) setResultAndStopExecution(refused);
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const refused = refusal(args.contextValue, args);
      if (refused) setResultAndStopExecution(refused);
    },
  };
}
