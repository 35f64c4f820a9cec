/*
 * Which currency an amount is in. The REST contract names a currency only on
 * a vending (`currencyCode`); a transaction shows none. So a transaction's
 * currency is the one the service sends with it when it does (a
 * `currencyCode`, else a `currency` field, carried through as unknown fields
 * are), else its vending's `currencyCode` where the service links the two
 * (a `vendingId` field), else the gateway's DEFAULT_CURRENCY. Pure: the
 * vending is read by whoever has a backend (src/events/event-currency.ts).
 */

/** The fields of a transaction read for its currency, in order. */
export const CURRENCY_FIELDS = ['currencyCode', 'currency'] as const;

const CODE = /^[A-Za-z]{3}$/;

/** An ISO 4217 code as the gateway keeps it (upper case), or undefined for anything that is not three letters. */
export function currencyCode(value: unknown): string | undefined {
  return typeof value === 'string' && CODE.test(value.trim()) ? value.trim().toUpperCase() : undefined;
}

/**
 * The currency a machine's prices and sales are counted in: its
 * `currencyCode` when that is three letters (kept upper case), else
 * DEFAULT_CURRENCY (a code missing, a number such as 978, or anything else).
 * The one rule for a machine, wherever its currency is decided.
 */
export function vendingCurrency(currencyCodeSent: unknown, defaultCurrency: string): string {
  return currencyCode(currencyCodeSent) ?? defaultCurrency;
}

/** The currency a transaction's own fields name, if any. */
export function currencyInFields(transaction: Record<string, unknown> | undefined): string | undefined {
  if (!transaction) return undefined;
  for (const field of CURRENCY_FIELDS) {
    const code = currencyCode(transaction[field]);
    if (code) return code;
  }
  return undefined;
}

/** The vending a transaction names, where the service links them. */
export function linkedVendingId(transaction: Record<string, unknown> | undefined): string | undefined {
  const id = transaction?.vendingId;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * The currency a transaction names: its own field, else that of the vending it links (`ofVending`: undefined when
 * that cannot be read); undefined when it names none. The order every part of the gateway decides in; the caller
 * falls back to DEFAULT_CURRENCY.
 */
export async function namedCurrency(
  transaction: Record<string, unknown> | undefined,
  ofVending: (vendingId: string) => Promise<string | undefined>,
): Promise<string | undefined> {
  const own = currencyInFields(transaction);
  if (own) return own;
  const vendingId = linkedVendingId(transaction);
  return vendingId === undefined ? undefined : ofVending(vendingId);
}
