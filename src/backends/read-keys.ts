import type { Credential } from './backend.js';

/*
 * Keys of backend reads, shared by the decorators that remember reads (the
 * coalescing one while in flight, the cache for a TTL). The credential is
 * part of every key, so one client's read never answers another's.
 */

export type ReadKind = 'transaction' | 'vending' | 'vendings';

export const readKey = (kind: ReadKind, parts: Array<string | undefined>, credential: Credential): string =>
  JSON.stringify([kind, ...parts, credential.authorization]);

/** Deletes from `map` every key of a read of transaction `id`, whatever the credential. */
export function forgetTransactionReads(map: { keys(): Iterable<string>; delete(key: string): unknown }, id: string): void {
  const prefix = `${JSON.stringify(['transaction', id]).slice(0, -1)},`;
  // Gathered first: not every map may be changed while its keys are walked.
  const matching = [...map.keys()].filter((key) => key.startsWith(prefix));
  for (const key of matching) map.delete(key);
}
