import { readFileSync } from 'node:fs';
import type { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { refuseOperation } from '../refusals/operation-refusals.js';
import { refuseInParams } from './operation-rules.js';

/*
 * TRUSTED_DOCUMENTS=only: the gateway runs just the operations of
 * schema/operations/, named by the sha256 of their text (the manifest
 * schema/persisted-documents.json). A client names one the way persisted-
 * operation clients do: `extensions.persistedQuery.sha256Hash` (Apollo's
 * format) or `documentId` ("sha256:<hash>" or the bare hash, the GraphQL over
 * HTTP proposal).
 */

export const DEFAULT_MANIFEST = new URL('../../schema/persisted-documents.json', import.meta.url);

export interface TrustedDocuments {
  /** The document named by a request's parameters; `undefined` when none is named. */
  idOf(params: { extensions?: unknown; documentId?: unknown }): string | undefined;
  lookup(id: string): string | undefined;
}

export function loadTrustedDocuments(manifest: URL | string = DEFAULT_MANIFEST): TrustedDocuments {
  const documents = new Map(Object.entries(JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, string>));
  return {
    idOf({ extensions, documentId }) {
      if (typeof documentId === 'string') return documentId.replace(/^sha256:/, '');
      const persisted = (extensions as { persistedQuery?: { version?: unknown; sha256Hash?: unknown } } | undefined)?.persistedQuery;
      return persisted?.version === 1 && typeof persisted.sha256Hash === 'string' ? persisted.sha256Hash : undefined;
    },
    lookup: (id) => documents.get(id),
  };
}

/**
 * The rule, in yoga's params stage, which every transport passes (HTTP, SSE,
 * and graphql-ws: see operation-rules.ts): a request sending its own text is
 * refused, one naming a trusted document gets its text. A refusal is set as
 * the result rather than thrown (as yoga's persisted-operations plugin does,
 * `refuseInParams`), so that the result hooks (metrics) see it on every
 * transport too; yoga answers both alike (the error's `http.status`).
 */
export function useTrustedDocuments(documents: TrustedDocuments): Plugin {
  return {
    onParams(payload) {
      const { params, setParams } = payload;
      const refuse = (error: GraphQLError) => refuseInParams(payload, error);
      if (params.query) return refuse(refuseOperation.trustedOnly());
      const id = documents.idOf(params as never);
      const text = id === undefined ? undefined : documents.lookup(id);
      if (text === undefined) return refuse(id === undefined ? refuseOperation.trustedOnly() : refuseOperation.unknownTrustedDocument());
      setParams({ query: text, operationName: params.operationName, variables: params.variables, extensions: params.extensions });
    },
  };
}
