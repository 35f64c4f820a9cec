import type { ProductLine } from './resources.js';

/*
 * Prices and quantities are numbers in the contract, with no bound shown.
 * Two large enough multiply or add past the largest number (1e308 × 1e308),
 * which no total, statistic or GraphQL Float can carry, and the history adds
 * amounts and quantities in millionths, which stay exact only while they are
 * safe integers (MAX_STORED_AMOUNT). Such lines are refused where the gateway
 * takes them in (webhooks), in every store alike; what the service itself
 * sends is reported per field (graphql/line-totals.ts).
 */

/** The largest amount (a line's price × quantity, a transaction's total) or quantity the history adds up exactly, in millionths. */
export const MAX_STORED_AMOUNT = Math.floor(Number.MAX_SAFE_INTEGER / 1_000_000);

/** A line's quantity: a line without one counts once. */
export const lineQuantity = (line: ProductLine): number => line.quantity ?? 1;

/** A line's amount, price × quantity, unrounded; null for a line without a price. The one rule wherever a line is summed. */
export function lineAmount(line: ProductLine): number | null {
  return line.productPrice === null || line.productPrice === undefined ? null : line.productPrice * lineQuantity(line);
}

/** How `value` is past the bound, in words: its value and the bound, or (Infinity, NaN) past any number. */
const past = (value: number, exactly: string) =>
  Number.isFinite(value) ? ` ${value}, past ${MAX_STORED_AMOUNT}, the largest ${exactly}` : ' past the largest number';

/** What makes these lines' amounts impossible to add up exactly, or undefined when they can be. */
export function unaddableAmounts(lines: readonly ProductLine[]): string | undefined {
  let sum = 0;
  for (const [index, line] of lines.entries()) {
    const quantity = lineQuantity(line);
    if (!(Math.abs(quantity) <= MAX_STORED_AMOUNT))
      return `products[${index}]: quantity is${past(quantity, 'quantity the history counts exactly')}`;
    const amount = lineAmount(line);
    if (amount === null) continue;
    if (!(Math.abs(amount) <= MAX_STORED_AMOUNT))
      return `products[${index}]: productPrice × quantity is${past(amount, 'amount the history adds up exactly')}`;
    sum += amount;
  }
  if (Math.abs(sum) <= MAX_STORED_AMOUNT) return undefined;
  return Number.isFinite(sum)
    ? `products: the line totals add up to${past(sum, 'amount the history adds up exactly')}`
    : 'products: the line totals add up past the largest number';
}
