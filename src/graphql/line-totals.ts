import { lineAmount, type ProductLine } from '../contract/contract.js';
import { refuse } from '../refusals/refusals.js';

/*
 * Money arithmetic for computed fields. Prices are decimals in the contract
 * (part 2) and their currency's precision is not shown, so sums are rounded to
 * ten decimal places: enough to drop binary noise (0.1 * 3), never a real digit.
 */

/**
 * A sum past the largest number (the service sent 1e308 × 1e308) is no Float:
 * the field fails with a code of its own instead of a masked error.
 */
function clean(value: number): number {
  if (!Number.isFinite(value)) throw refuse.lineTotalTooLarge();
  return Number(value.toFixed(10));
}

/** The line's amount (contract/amounts.ts), rounded; a line without a price has no total. */
export function lineTotal(line: ProductLine): number | null {
  const amount = lineAmount(line);
  return amount === null ? null : clean(amount);
}

export function total(lines: readonly ProductLine[]): number {
  return clean(lines.reduce((sum, line) => sum + (lineTotal(line) ?? 0), 0));
}

/** Totals of product lists that do not change (the history's): each is summed once. */
const totals = new WeakMap<readonly ProductLine[], number>();

/** `total`, remembered for the same list (a list is never changed once read). */
export function totalOf(lines: readonly ProductLine[]): number {
  let sum = totals.get(lines);
  if (sum === undefined) totals.set(lines, (sum = total(lines)));
  return sum;
}
