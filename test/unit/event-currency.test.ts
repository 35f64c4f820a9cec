import { describe, expect, it } from 'vitest';
import { createEventCurrency } from '../../src/events/event-currency.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';

/*
 * An event's currency, decided once as it is published: the transaction's own
 * field (three letters, upper-cased), else its vending's currencyCode (read
 * once per machine), else DEFAULT_CURRENCY.
 */

const event = (transaction: Record<string, unknown>, account?: string): TransactionUpdateEvent => ({
  eventId: 'e1',
  ...(account ? { account } : {}),
  type: 'transaction.update',
  format: 'ENVELOPED',
  receivedAt: new Date(0).toISOString(),
  occurredAt: undefined,
  transactionId: 't1',
  status: 'completed',
  products: [],
  transaction: { transactionId: 't1', ...transaction },
  raw: {},
});

describe('event currency', () => {
  it("takes the transaction's own field, then its vending's, then the default", async () => {
    const reads: string[] = [];
    const withCurrency = createEventCurrency({
      defaultCurrency: 'EUR',
      vendingCurrency: async (account, vendingId) => {
        reads.push(`${account}/${vendingId}`);
        return vendingId === 'se' ? { currencyCode: 'SEK' } : vendingId === 'odd' ? { currencyCode: 'kronor' } : undefined;
      },
    });
    expect((await withCurrency(event({ currencyCode: 'gbp', vendingId: 'se' }))).currency).toBe('GBP');
    expect((await withCurrency(event({ currency: 'USD' }))).currency).toBe('USD');
    expect((await withCurrency(event({ currencyCode: 'pounds', vendingId: 'se' }))).currency).toBe('SEK');
    expect((await withCurrency(event({ vendingId: 'se' }))).currency).toBe('SEK');
    expect((await withCurrency(event({ vendingId: 'odd' }))).currency).toBe('EUR');
    expect((await withCurrency(event({}))).currency).toBe('EUR');
    // A machine's currency is read once; an event that already carries one is left as it is.
    expect(reads).toEqual(['/se', '/odd']);
    expect((await withCurrency({ ...event({ vendingId: 'se' }), currency: 'CHF' })).currency).toBe('CHF');
  });

  it('falls back to the default when the vending cannot be read', async () => {
    const withCurrency = createEventCurrency({
      defaultCurrency: 'USD',
      vendingCurrency: async () => Promise.reject(new Error('service away')),
    });
    expect((await withCurrency(event({ vendingId: 'x' }))).currency).toBe('USD');
  });

  it('asks the transaction the backend holds only when the event names neither a currency nor a vending', async () => {
    const held: Record<string, Record<string, unknown>> = { t1: { transactionId: 't1', vendingId: 'se' } };
    const withCurrency = createEventCurrency({
      defaultCurrency: 'EUR',
      vendingCurrency: async (_account, vendingId) =>
        vendingId === 'se' ? { currencyCode: 'SEK' } : vendingId === 'gb' ? { currencyCode: 'gbp' } : undefined,
      heldTransaction: (account, id) => (account === '' ? held[id] : undefined),
    });
    expect((await withCurrency(event({}))).currency).toBe('SEK');
    held.t1 = { transactionId: 't1', currencyCode: 'usd', vendingId: 'se' };
    expect((await withCurrency(event({}))).currency).toBe('USD');
    // The event's own word comes first, even when it names a vending whose currency cannot be read.
    expect((await withCurrency(event({ vendingId: 'gb' }))).currency).toBe('GBP');
    expect((await withCurrency(event({ vendingId: 'unknown' }))).currency).toBe('EUR');
    // Another account's transactions are not the backend's to tell.
    expect((await withCurrency(event({}, 'elsewhere'))).currency).toBe('EUR');
  });
});
