import { boundedCache } from '../backends/bounded-cache.js';
import { currencyInFields, linkedVendingId, namedCurrency, vendingCurrency } from '../contract/contract.js';
import { accountOf } from '../contract/accounts.js';
import type { TransactionUpdateEvent } from './normalize.js';

/*
 * The currency of an event's amounts, decided once, where the event is
 * published (contract/currency.ts says the order): the transaction's own
 * field, else the `currencyCode` of the vending it names; when the event names
 * neither, the same of the transaction as the backend holds it, where that
 * costs no call to the service (the memory backend); else the default. A
 * REST service's webhook without a currency or a vendingId takes the default:
 * reading the transaction back for every such webhook would double the calls.
 * Everything after the log (history, subscribers, every instance) reads the
 * decision the event carries, so it is never made twice or differently.
 */

export interface EventCurrencyOptions {
  /** DEFAULT_CURRENCY. */
  defaultCurrency: string;
  /**
   * A vending of the account, read from the service; undefined when it cannot be read (no key
   * of the gateway's own, another account's vending, the service away): the event then takes the default.
   */
  vendingCurrency?: ((account: string, vendingId: string) => Promise<{ currencyCode?: unknown } | undefined>) | undefined;
  /** The transaction as the backend holds it without a call to the service (Backend.heldTransaction), if it does. */
  heldTransaction?: ((account: string, transactionId: string) => Record<string, unknown> | undefined) | undefined;
}

/** A vending's currency is set when the machine is: read once an hour at most per vending. */
const VENDING_CURRENCY_TTL_MS = 3_600_000;
const MOST_VENDINGS = 10_000;

export function createEventCurrency(options: EventCurrencyOptions): (event: TransactionUpdateEvent) => Promise<TransactionUpdateEvent> {
  const known = boundedCache<string>({ max: MOST_VENDINGS, ttlMs: VENDING_CURRENCY_TTL_MS });

  async function ofVending(account: string, vendingId: string): Promise<string | undefined> {
    const key = `${account}:${vendingId}`;
    const held = known.get(key);
    if (held !== undefined) return held;
    const read = await options.vendingCurrency?.(account, vendingId).catch(() => undefined);
    if (read === undefined) return undefined;
    // A machine read has a currency by the one rule for machines (the page names the same one), its code or the default.
    const code = vendingCurrency(read.currencyCode, options.defaultCurrency);
    known.set(key, code);
    return code;
  }

  /** The currency a transaction's fields name, or that of the vending they name. */
  const named = (account: string, transaction: Record<string, unknown> | undefined) =>
    namedCurrency(transaction, (vendingId) => ofVending(account, vendingId));

  return async (event) => {
    if (event.currency !== undefined) return event;
    const account = accountOf(event);
    const sent = event.transaction as Record<string, unknown> | undefined;
    const fromEvent = currencyInFields(sent) !== undefined || linkedVendingId(sent) !== undefined;
    const currency =
      (await named(account, sent)) ??
      (fromEvent ? undefined : await named(account, options.heldTransaction?.(account, event.transactionId))) ??
      options.defaultCurrency;
    return { ...event, currency };
  };
}
