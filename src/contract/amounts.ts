import type { ProductLine } from './resources.js';

/*
 * Prices and quantities are numbers in the contract, with no bound shown.
 * Two large enough multiply or add past the largest number (1e308 × 1e308),
 * which no total, statistic or GraphQL Float can carry. Such lines are refused
 * where the gateway takes them in (webhooks); what the service itself sends
 * is reported per field (graphql/amounts.ts).
 */

/** What makes these lines' amounts impossible to add up, or undefined when they can be. */
export function unaddableAmounts(lines: readonly ProductLine[]): string | undefined {
  let sum = 0;
  for (const [index, line] of lines.entries()) {
    if (line.productPrice === null || line.productPrice === undefined) continue;
    const amount = line.productPrice * (line.quantity ?? 1);
    if (!Number.isFinite(amount)) return `products[${index}]: productPrice × quantity is past the largest number`;
    sum += amount;
  }
  return Number.isFinite(sum) ? undefined : 'products: the line totals add up past the largest number';
}
