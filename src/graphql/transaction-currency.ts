import { namedCurrency, vendingCurrency, type Transaction } from '../contract/contract.js';
import type { GatewayContext } from './context.js';

/*
 * A transaction's currency as GraphQL shows it. The history's decision wins:
 * the one it made when the event came (`decided`, for a transaction read from
 * the history, else the record the history keeps of it), so that
 * `Transaction.currency` never disagrees with what the history counted for
 * that transaction, even where the service's own copy names a vending the
 * webhook did not. A transaction the history never saw follows the rule every
 * part of the gateway follows (contract/currency.ts): its own field, else its
 * vending's `currencyCode` (read through the operation's loader, so a page of
 * transactions of one machine reads it once), else DEFAULT_CURRENCY.
 */
export async function currencyOfTransaction(tx: Transaction, ctx: GatewayContext, decided?: string): Promise<string> {
  if (decided) return decided;
  // A history that cannot be read now leaves the rule: the amount is still shown.
  const recorded = ctx.history ? (await ctx.history.record(tx.transactionId).catch(() => undefined))?.currency : undefined;
  if (recorded) return recorded;
  // A vending that cannot be read (unknown, the service away) leaves the default: the amount is still shown.
  const ofVending = async (vendingId: string) => {
    const vending = await ctx.loaders
      .vendingById(undefined)
      .load(vendingId)
      .catch(() => undefined);
    return vending ? vendingCurrency(vending.currencyCode, ctx.defaultCurrency) : undefined;
  };
  return (await namedCurrency(tx, ofVending)) ?? ctx.defaultCurrency;
}
