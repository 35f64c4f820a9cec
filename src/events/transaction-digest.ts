import { createHash } from 'node:crypto';
import { isJsonObject } from '../contract/contract.js';

/**
 * Hex sha256 of a transaction as a webhook carried it, with object keys sorted
 * at every depth, so two bodies that differ only in key order or spacing are
 * the same content (a legacy redelivery).
 */
export function transactionDigest(transaction: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(sortKeys(transaction)))
    .digest('hex');
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isJsonObject(value)) return value;
  // fromEntries defines own properties, so a "__proto__" key is hashed like any other.
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys(value[key])]),
  );
}
