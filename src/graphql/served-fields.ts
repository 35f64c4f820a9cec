import { driftOf, type Drift, type ProductLine } from '../contract/contract.js';
import type { GatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';

/*
 * GraphQL serves what it can of a resource the service sent otherwise than
 * the contract shows (contract/parse.ts reads it tolerantly): a field that
 * drifted without a lossless conversion is an error on that field alone,
 * never a made-up value, and the other fields are served. The message names
 * the field and the JSON types, nothing the service wrote.
 */

const RESOURCE_WORDS: Record<Drift['resource'], string> = { transaction: 'transaction', vending: 'vending', product_line: 'product line' };

function driftError(drift: Drift): GatewayError {
  const what = RESOURCE_WORDS[drift.resource];
  return drift.kind === 'missing'
    ? refuse.fieldMissing(what, drift.field, drift.kind)
    : refuse.fieldMistyped(what, drift.field, drift.sent, drift.expected, drift.kind);
}

/** `resource[field]` as read, or the field's error when the service's value could not be read. */
export function served<T extends object, K extends keyof T & string>(resource: T, field: K): T[K] {
  const drift = driftOf(resource, field);
  if (drift !== undefined && drift.kind !== 'converted') throw driftError(drift);
  return resource[field];
}

/** A nullable field: null when the service sent none, its error when what it sent could not be read. */
export const servedOrNull = <T extends object, K extends keyof T & string>(resource: T, field: K): NonNullable<T[K]> | null =>
  served(resource, field) ?? null;

/** Lines whose amounts can be added up: a price or quantity that could not be read fails the sum, never counts as none. */
export function servedAmounts(lines: readonly ProductLine[]): readonly ProductLine[] {
  for (const line of lines) {
    served(line, 'productPrice');
    served(line, 'quantity');
  }
  return lines;
}
