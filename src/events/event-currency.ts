import { boundedCache } from '../backends/bounded-cache.js';
import { currencyCode, currencyInFields, linkedVendingId } from '../contract/index.js';
import { accountOf } from '../contract/accounts.js';
import type { TransactionUpdateEvent } from './normalize.js';

/*
 * The currency of an event's amounts, decided once, where the event is
 * published (contract/currency.ts says the order): the transaction's own
 * field, else the `currencyCode` of the vending it names, else the default.
 * Everything after the log (history, subscribers, every instance) reads the
 * decision the event carries, so it is never made twice or differently.
 */

export interface EventCurrencyOptions {
  /** DEFAULT_CURRENCY. */
  defaultCurrency: string;
  /**
   * The `currencyCode` of a vending of the account, read from the service; undefined when it cannot be read (no key
   * of the gateway's own, another account's vending, the service away): the event then takes the default.
   */
  vendingCurrency?: ((account: string, vendingId: string) => Promise<unknown>) | undefined;
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
    const code = currencyCode(await options.vendingCurrency?.(account, vendingId).catch(() => undefined));
    if (code) known.set(key, code);
    return code;
  }

  return async (event) => {
    if (event.currency !== undefined) return event;
    const own = currencyInFields(event.transaction);
    const vendingId = own ? undefined : linkedVendingId(event.transaction);
    const currency = own ?? (vendingId && (await ofVending(accountOf(event), vendingId))) ?? options.defaultCurrency;
    return { ...event, currency };
  };
}
