import { HISTORY_FIELDS } from './types/transaction-history.js';
import { hash } from 'node:crypto';
import { createInMemoryCache, useResponseCache, type Cache } from '@graphql-yoga/plugin-response-cache';
import type { Plugin } from 'graphql-yoga';
import type { Credential } from '../backends/backend.js';
import { boundedCache } from '../backends/bounded-cache.js';
import type { RequestScope } from '../http/request-scope.js';
import { refusedInParams } from './operation-rules.js';

/*
 * Whole GraphQL results served again for the TTL (CACHE_TTL_MS), with yoga's
 * response cache: keyed by document, operation, variables and the request's
 * credential (one client's answer is never served to another), found before
 * the document is even parsed. Results are tagged with the entities they hold
 * (`Transaction:<id>`, `Vending:<id>`), and a webhook or a payment update
 * about a transaction drops every result that holds it, as the entity cache
 * drops its entries. Results with errors are not kept, nor results larger
 * than `maxResultBytes`, so the cache is bounded in bytes. Only HTTP requests
 * use it: a WebSocket operation has no request for yoga to key it by.
 *
 * A result computed from a read that began before an event must not be kept
 * after the event dropped what it replaces: each key remembers when it was
 * missed (a count of drops), and a result is kept only if none of its
 * entities was dropped since.
 */

export interface ResponseCacheOptions {
  ttlMs: number;
  /** Most results held; the least recently used goes first. @default 1000 */
  maxEntries?: number;
  /** Largest result kept, as JSON text. @default 65536 */
  maxResultBytes?: number;
}

export interface ResponseCache {
  plugin: Plugin;
  /** Drops every result that holds this transaction. */
  forgetTransaction(id: string): void;
}

type Entity = { typename: string; id?: string | number };

/** Drops remembered per entity, and misses per key, beyond which the oldest are forgotten (and then judged stale). */
const REMEMBERED = 10_000;

const entityKey = ({ typename, id }: Entity) => `${typename}:${id ?? ''}`;

function keepingOnlyFresh(inner: Cache): Cache {
  let drops = 0;
  /** Drops at or before this count are no longer remembered per entity. */
  let forgottenUpTo = 0;
  /** Entity → the drop count just after it was last dropped; one forgotten raises `forgottenUpTo`. */
  const droppedAt = boundedCache<number>({
    max: REMEMBERED,
    onEvict: (at) => {
      forgottenUpTo = Math.max(forgottenUpTo, at);
    },
  });
  /** Result key → the drop count when it was first missed and not yet stored. */
  const missedAt = boundedCache<number>({ max: REMEMBERED });

  return {
    get(key) {
      const found = inner.get(key);
      if (found === null || found === undefined) {
        if (!missedAt.has(key)) missedAt.set(key, drops);
      }
      return found;
    },
    set(key, result, entities, ttl) {
      const since = missedAt.get(key);
      missedAt.delete(key);
      if (since === undefined || since < forgottenUpTo) return;
      const held = [...entities];
      for (const entity of held) if ((droppedAt.get(entityKey(entity)) ?? 0) > since) return;
      return inner.set(key, result, held, ttl);
    },
    invalidate(entities) {
      drops += 1;
      const dropped = [...entities];
      for (const entity of dropped) droppedAt.set(entityKey(entity), drops);
      return inner.invalidate(dropped);
    },
  };
}

/**
 * The request's credential, when it is an HTTP request the front door
 * admitted (its scope is the server context's, graphql-route.ts) whose
 * identity may read: the cache answers before the permission check
 * (use-permissions.ts) would run, so a key whose `read` was taken away is
 * never served what it read before.
 */
function sessionOf(context: { scope?: RequestScope | undefined } | undefined): string | undefined {
  const credential: Credential | undefined = context?.scope?.credential;
  // Closed by default: a credential without an identity reads nothing, from here or anywhere.
  return credential?.identity?.permissions.has('read') === true ? credential.authorization : undefined;
}

/** One synchronous digest; the key is also the ETag clients see, so it never shows the credential. */
const keyOf = (
  documentString: string,
  operationName: string | null | undefined,
  variables: unknown,
  sessionId: string | null | undefined,
): string => hash('sha256', JSON.stringify([documentString, operationName ?? null, variables ?? null, sessionId ?? null]), 'base64url');

export function createResponseCache({ ttlMs, maxEntries = 1_000, maxResultBytes = 65_536 }: ResponseCacheOptions): ResponseCache {
  const held = createInMemoryCache({ max: maxEntries });
  const cache = keepingOnlyFresh(held);
  const plugin: Plugin = useResponseCache<{ scope?: RequestScope | undefined }>({
    ttl: ttlMs,
    cache,
    session: (_request, context) => sessionOf(context) ?? null,
    enabled: (_request, context) => sessionOf(context) !== undefined,
    idFields: ['transactionId', 'vendingId'],
    // The history changes with every event, not only with the entities it names.
    ttlPerSchemaCoordinate: Object.fromEntries(HISTORY_FIELDS.map((field) => [field, 0])),
    // Bounded in bytes too (entries × largest result: 64 MiB by default): a client's 500-id batch is not kept.
    shouldCacheResult: ({ result }) => !result.errors?.length && JSON.stringify(result.data).length <= maxResultBytes,
    buildResponseCacheKey: ({ documentString, operationName, variableValues, sessionId }) =>
      keyOf(documentString, operationName, variableValues, sessionId),
  });
  return {
    // A request a rule refused before it is answered with that refusal, never with a result held for its key.
    plugin: { ...plugin, onParams: (payload) => (refusedInParams(payload.context) ? undefined : plugin.onParams?.(payload)) },
    forgetTransaction: (id) => void cache.invalidate([{ typename: 'Transaction', id }]),
  };
}
