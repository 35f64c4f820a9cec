import type { FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { requirePermission } from '../auth/permissions.js';
import type { Backend, Credential } from '../backends/backend.js';
import type { Permission } from '../config/config.js';
import { dataEnvelope, idProblem, isJsonObject, jsonTooDeep, MAX_JSON_DEPTH, sentAs } from '../contract/contract.js';
import { refuse } from '../refusals/refusals.js';
import type { Route } from '../http/front-door.js';

/*
 * The REST passthrough: the contract's four paths at the gateway
 * root, answering the contract's envelopes from the same Backend as GraphQL.
 * (A path of ours asked with another method is the front door's 405.)
 */

export interface RestRoutesOptions {
  backend: Backend;
  /** The front door's guard for these routes: authenticates and rate limits, leaving the credential in the scope. */
  guard(request: FastifyRequest): Promise<void>;
}

type Params = { id?: string };

// `products` is passed as given (contract part 4): its accepted values are not shown.
const productsOf = (request: FastifyRequest): { products: string | undefined } => {
  const value = (request.query as Record<string, unknown>).products;
  return { products: typeof value === 'string' ? value : Array.isArray(value) ? String(value[0]) : undefined };
};

function credentialOf(request: FastifyRequest): Credential {
  const { credential } = request.scope;
  if (!credential) throw new Error('a REST route ran without its guard');
  return credential;
}

function idOf(request: FastifyRequest): string {
  const id = (request.params as Params).id ?? '';
  const problem = idProblem(id);
  if (problem) throw refuse.pathIdInvalid(problem);
  return id;
}

function paymentBody(request: FastifyRequest): Record<string, unknown> {
  const bytes = request.body instanceof Buffer ? request.body : Buffer.alloc(0);
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw refuse.bodyNotJson();
  }
  if (!isJsonObject(body)) throw refuse.bodyNotObject();
  if (jsonTooDeep(body)) throw refuse.bodyTooDeep(MAX_JSON_DEPTH);
  return body;
}

/**
 * A read's answer: the service's own success body, byte for byte, when the
 * resource came from it (REST promises the service's answer, drifts from the
 * contract included); otherwise (the memory backend, a transaction a webhook
 * refreshed) the contract's envelope around it.
 */
function answered(reply: FastifyReply, resource: object): unknown {
  const text = sentAs(resource);
  if (text === undefined) return dataEnvelope(resource);
  void reply.type('application/json; charset=utf-8');
  return text;
}

export function restRoutes({ backend, guard }: RestRoutesOptions): Route[] {
  const served: Array<Omit<Route, 'envelope' | 'transport'> & { method: HTTPMethods; permission: Permission }> = [
    {
      method: 'GET',
      permission: 'read',
      url: '/transactions/:id',
      operation: 'GET /transactions/{id}',
      handler: async (request, reply) => answered(reply, await backend.getTransaction(idOf(request), credentialOf(request), request.scope)),
    },
    {
      method: 'PUT',
      permission: 'pay',
      url: '/transactions/:id/payment',
      operation: 'PUT /transactions/{id}/payment',
      handler: async (request) => backend.updatePayment(idOf(request), paymentBody(request), credentialOf(request), request.scope),
    },
    {
      method: 'GET',
      permission: 'read',
      url: '/vendings',
      operation: 'GET /vendings',
      handler: async (request, reply) =>
        answered(reply, await backend.listVendings(productsOf(request), credentialOf(request), request.scope)),
    },
    {
      method: 'GET',
      permission: 'read',
      url: '/vendings/:id',
      operation: 'GET /vendings/{id}',
      handler: async (request, reply) =>
        answered(reply, await backend.getVending(idOf(request), productsOf(request), credentialOf(request), request.scope)),
    },
  ];
  // Judged with the key, before the body is read: a PUT without `pay` is a 403 whatever it carries.
  return served.map(({ permission, ...route }) => ({
    ...route,
    guard: async (request: FastifyRequest) => {
      await guard(request);
      requirePermission(request.scope.credential, permission);
    },
    envelope: 'rest',
    transport: 'rest',
  }));
}
