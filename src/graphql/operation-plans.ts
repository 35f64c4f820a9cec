import { getOperationAST, type DocumentNode, type ExecutionResult, type GraphQLSchema, OperationTypeNode } from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import { permissionFor } from '../auth/permissions.js';
import { boundedCache } from '../backends/bounded-cache.js';
import type { Permission } from '../config/index.js';
import type { RequestScope } from '../http/request-scope.js';
import { createContext, type GatewayServices } from './context.js';
import { schema } from './schema.js';
import { jsonTooDeep } from '../contract/index.js';
import { costExceeds } from './use-query-limits.js';

/*
 * Plans: a query or mutation that yoga's path ran compiled (graphql-jit) is
 * remembered by its text and operation name, with what its rules decided
 * once and for all: the document parsed and validated (GraphQL Armor's
 * limits, introspection), the permission its type needs, whether a variable
 * can change its cost. The next HTTP request that sends the same text runs
 * from the plan without yoga's params stage, parse and validation caches or
 * envelop's hooks: the rules that depend on the request are asked again
 * (the nesting of its variables and extensions, the credential's
 * permission, the cost with its variables), and any that would refuse sends
 * the request to yoga's path, which words the refusal. So does a plan whose
 * variables graphql-jit refuses before anything ran.
 *
 * A planned result with no errors is written here (what yoga's writer makes
 * of a result that is only `data`). A result with errors is handed to yoga's
 * path as the execution's result (`replayed`), so that masking, error codes
 * and the metrics shape it exactly as they shape any other; nothing runs
 * twice. test/fuzz/graphql-fast-path.property.test.ts holds both paths to
 * the same answers, upstream faults included.
 */

export interface Plan {
  document: DocumentNode;
  compiled: CompiledQuery;
  /** What the operation's type needs (a query `read`, a mutation `pay`). */
  permission: Permission;
  /** The document's own name for its operation: the metrics' label when the request names none. */
  name: string | undefined;
  /** True when no variable changes the operation's cost, which passed MAX_COST when noted. */
  fixedCost: boolean;
}

export interface PlanParams {
  query: string;
  operationName?: unknown;
  variables?: unknown;
  extensions?: unknown;
}

/** A planned run: its result, or what yoga's path must shape (a result with errors, or what the run threw). */
export type Planned = { result: ExecutionResult } | { replay: Replay };
export type Replay = { result: ExecutionResult } | { thrown: unknown };

export interface OperationPlans {
  /** Notes the plan of an operation yoga's path is about to run compiled (it passed parse and validation). */
  note(
    text: string,
    operationName: string | null | undefined,
    document: DocumentNode,
    compiled: CompiledQuery,
    schema: GraphQLSchema,
  ): void;
  /**
   * Runs a request from its plan, once the front door admitted it; undefined when it has none or a rule that
   * depends on the request would refuse it (then yoga's path answers).
   */
  run(params: PlanParams, scope: RequestScope): Promise<Planned | undefined>;
  /** What a replayed request's execution returns or throws, instead of running again (use-compiled-execution.ts). */
  replayed(request: object): Replay | undefined;
  /** Marks a request whose execution, already run from its plan, came to this. */
  replay(request: object, replay: Replay): void;
}

export interface OperationPlansOptions {
  services: GatewayServices;
  maxCost: number;
  /** Names a planned run's operation for the metrics: the request's name, else its document's (as yoga's path does). */
  nameOperation(scope: RequestScope, requested: string | undefined, own: string | undefined): void;
  /** Plans remembered; the least recently used is forgotten (and made again on its next run). @default 1000 */
  maxPlans?: number;
}

const keyOf = (text: string, operationName: unknown) => `${typeof operationName === 'string' ? operationName : ''}\n${text}`;

export function createOperationPlans({ services, maxCost, nameOperation, maxPlans = 1_000 }: OperationPlansOptions): OperationPlans {
  const plans = boundedCache<Plan>({ max: maxPlans });
  const replays = new WeakMap<object, Replay>();
  return {
    note(text, operationName, document, compiled, noted) {
      const key = keyOf(text, operationName);
      if (plans.get(key)?.compiled === compiled) return;
      const operation = getOperationAST(document, operationName);
      if (!operation || operation.operation === OperationTypeNode.SUBSCRIPTION) return;
      const cost = costExceeds({ schema: noted, document, operationName, variableValues: {} }, maxCost);
      plans.set(key, {
        document,
        compiled,
        permission: permissionFor[operation.operation],
        name: operation.name?.value,
        fixedCost: cost.fixed && !cost.exceeds,
      });
    },
    async run(params, scope) {
      const plan = plans.get(keyOf(params.query, params.operationName));
      if (!plan) return undefined;
      const { credential } = scope;
      if (!credential?.identity?.permissions.has(plan.permission)) return undefined;
      // The text's own nesting passed when the plan was noted; variables and extensions come with each request.
      if (jsonTooDeep(params.variables) || jsonTooDeep(params.extensions)) return undefined;
      const variables = (params.variables ?? {}) as Record<string, unknown>;
      const operationName = typeof params.operationName === 'string' ? params.operationName : undefined;
      if (!plan.fixedCost && costExceeds({ schema, document: plan.document, operationName, variableValues: variables }, maxCost).exceeds)
        return undefined;
      const context = await createContext(services, { authorization: credential.authorization, credential, requestId: scope.id, scope });
      let result: ExecutionResult;
      try {
        result = await plan.compiled.query(undefined, context, variables);
      } catch (thrown) {
        nameOperation(scope, operationName, plan.name);
        return { replay: { thrown } };
      }
      // Variables refused before anything ran: graphql-js words those refusals as clients know them.
      if (result.data === undefined && result.errors?.length) return undefined;
      nameOperation(scope, operationName, plan.name);
      return result.errors?.length ? { replay: { result } } : { result };
    },
    replayed: (request) => replays.get(request),
    replay: (request, replay) => void replays.set(request, replay),
  };
}
