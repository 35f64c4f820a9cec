import { hash } from 'node:crypto';
import type { OperationTypeNode } from 'graphql';
import type { Credential, Identity } from '../backends/backend.js';
import { PERMISSIONS, type Permission } from '../config/config.js';
import { refuse } from '../refusals/refusals.js';

/*
 * What each permission allows: `read` queries and REST
 * GETs, `subscribe` live events, `pay` the payment mutation and REST PUT.
 * GraphQL (use-permissions.ts) and REST (rest-routes.ts) ask the same
 * question here, so the two never disagree.
 */

export const ALL_PERMISSIONS: ReadonlySet<Permission> = new Set(PERMISSIONS);

/** The permission a GraphQL operation of this type needs. */
export const permissionFor: Readonly<Record<OperationTypeNode, Permission>> = { query: 'read', mutation: 'pay', subscription: 'subscribe' };

/** An API key's identity: a digest prefix names it in logs and rate limits, never the key. `account` absent: the default account. */
export const keyIdentity = (key: string, permissions: readonly Permission[] | ReadonlySet<Permission>, account?: string): Identity => ({
  id: `key-${hash('sha256', key, 'hex').slice(0, 12)}`,
  permissions: new Set(permissions),
  ...(account === undefined ? {} : { account }),
});

/**
 * Throws unless the request's identity has `permission`: UNAUTHENTICATED
 * without a credential, FORBIDDEN for a credential without an identity (it
 * may do nothing: the gateway's own work names SYSTEM_IDENTITY) or one that
 * lacks the permission.
 */
export function requirePermission(credential: Credential | undefined, permission: Permission): void {
  if (!credential) throw refuse.missingKey(false);
  if (credential.identity?.permissions.has(permission) === true) return;
  // The refusal: GraphQL answers it with 200 and no `data` (the operation does not run), REST with 403.
  throw refuse.lacksPermission(permission);
}
