import type { FastifyRequest } from 'fastify';
import { createYoga } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import { requirePermission } from '../../src/auth/permissions.js';
import { SYSTEM_IDENTITY, type Credential } from '../../src/backends/backend.js';
import { demoBackend } from '../helpers/gateway.js';
import type { GatewayContext } from '../../src/graphql/context.js';
import { schema } from '../../src/graphql/schema.js';
import { usePermissions } from '../../src/graphql/use-permissions.js';
import { restRoutes } from '../../src/rest/rest-routes.js';

/*
 * Permissions fail closed: a credential that carries no identity (the type
 * requires one, so only JavaScript or a cast can make it) may do nothing,
 * on GraphQL as on REST. The gateway's own work names its identity.
 */

const withoutIdentity = { authorization: 'some-key' } as unknown as Credential;

describe('a credential without an identity', () => {
  it('is refused every permission', () => {
    for (const permission of ['read', 'subscribe', 'pay'] as const) {
      expect(() => requirePermission(withoutIdentity, permission)).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    }
    expect(() => requirePermission(undefined, 'read')).toThrow(expect.objectContaining({ code: 'UNAUTHENTICATED' }));
  });

  it('runs no GraphQL operation', async () => {
    const yoga = createYoga({
      schema,
      plugins: [usePermissions()],
      context: () => ({ credential: withoutIdentity }) as unknown as GatewayContext,
    });
    const response = await yoga.fetch('http://gateway/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    const body = (await response.json()) as { data?: unknown; errors?: Array<{ extensions?: { code?: string } }> };
    expect(body.data).toBeUndefined();
    expect(body.errors?.map((error) => error.extensions?.code)).toEqual(['FORBIDDEN']);
  });

  it('reaches no REST route', async () => {
    const routes = restRoutes({
      backend: demoBackend(),
      guard: async (request) => {
        request.scope.credential = withoutIdentity;
      },
    });
    for (const route of routes) {
      const request = { scope: { credential: undefined }, headers: {} } as unknown as FastifyRequest;
      await expect(route.guard!(request)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    }
  });
});

describe('the gateway acting for itself', () => {
  it('has an identity of its own that may read and nothing more', () => {
    const system: Credential = { authorization: '', identity: SYSTEM_IDENTITY };
    expect(() => requirePermission(system, 'read')).not.toThrow();
    expect(() => requirePermission(system, 'pay')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(() => requirePermission(system, 'subscribe')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  });
});
