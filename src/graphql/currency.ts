import { currencyCode, currencyInFields, linkedVendingId, type Transaction } from '../contract/index.js';
import type { GatewayContext } from './context.js';

/*
 * A transaction's currency as GraphQL shows it, by the rule every part of the
 * gateway follows (contract/currency.ts): its own field, else its vending's
 * `currencyCode` (read through the operation's loader, so a page of
 * transactions of one machine reads it once), else DEFAULT_CURRENCY. One the
 * history decided when the event came (`decided`) stands.
 */
export async function currencyOfTransaction(tx: Transaction, ctx: GatewayContext, decided?: string): Promise<string> {
  if (decided) return decided;
  const own = currencyInFields(tx);
  if (own) return own;
  const vendingId = linkedVendingId(tx);
  if (vendingId) {
    const vending = await ctx.loaders
      .vendingById(undefined)
      .load(vendingId)
      // A vending that cannot be read (unknown, the service away) leaves the default: the amount is still shown.
      .catch(() => undefined);
    const code = currencyCode(vending?.currencyCode);
    if (code) return code;
  }
  return ctx.defaultCurrency;
}
