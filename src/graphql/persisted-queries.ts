import { useAPQ, type APQStore } from '@graphql-yoga/plugin-apq';
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { boundedCache } from '../backends/bounded-cache.js';
import { ErrorCode, httpStatusOf } from '../errors.js';
import { refuseInParams, refusedInParams } from './operation-rules.js';

/*
 * Automatic persisted queries (Apollo's `persistedQuery` extension), taken
 * unless TRUSTED_DOCUMENTS=only: yoga's own plugin, in the params stage
 * every transport passes. A hash alone that names no registered text is
 * refused with PERSISTED_QUERY_NOT_FOUND, which Apollo's link answers by
 * sending the text with its hash; that registers it, and the later sends of
 * the hash alone are served, through every rule after this one (limits,
 * cost, permissions) like any operation. Registered texts are shared by the
 * instances of a deployment where it has Redis, and bounded either way.
 */

/** How long a registered text is kept after its last registration: a day of a dashboard's sessions. */
export const PERSISTED_QUERY_TTL_MS = 86_400_000;

/** Texts kept in process: a registration is a document, whatever it holds, so count and bytes are both bounded. */
const IN_PROCESS = { max: 1_000, maxBytes: 16 * 1024 * 1024 };

/** The store of one process, for a deployment without Redis: the gateway's bounded map. */
export function inProcessQueries(ttlMs: number): APQStore {
  const cache = boundedCache<string>({ max: IN_PROCESS.max, ttlMs, maxSize: { total: IN_PROCESS.maxBytes, size: (text) => text.length } });
  return { get: (hash) => cache.get(hash), set: (hash, text) => void cache.set(hash, text) };
}

/** The codes this rule refuses with, each with its status in the catalogue. */
const REFUSALS: Record<string, ErrorCode> = {
  PERSISTED_QUERY_NOT_FOUND: ErrorCode.PERSISTED_QUERY_NOT_FOUND,
  PERSISTED_QUERY_MISMATCH: ErrorCode.PERSISTED_QUERY_MISMATCH,
};

export function usePersistedQueries(store: APQStore): Plugin {
  const apq = useAPQ({ store }) as Required<Pick<Plugin, 'onParams'>>;
  return {
    async onParams(payload) {
      // A rule before this one refused the request: nothing of it is registered.
      if (refusedInParams(payload.context)) return;
      try {
        await apq.onParams(payload);
      } catch (error) {
        const code = error instanceof GraphQLError ? REFUSALS[String(error.extensions.code)] : undefined;
        if (!(error instanceof GraphQLError) || code === undefined) throw error;
        // Set as the result, as every params rule refuses (operation-rules.ts), in the words Apollo's link reads.
        refuseInParams(payload, new GraphQLError(error.message, { extensions: { code, http: { status: httpStatusOf(code) } } }));
      }
    },
  };
}
