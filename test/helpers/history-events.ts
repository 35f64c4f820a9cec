import type { TransactionUpdateEvent } from '../../src/events/normalize.js';

/** A transaction event dated `at` (its envelope's time), received a second later: one product line of `quantity` at `price`. */
export function historyEvent(
  transactionId: string,
  status: string,
  at: number,
  eventId: string,
  price = 2,
  quantity = 1,
): TransactionUpdateEvent {
  const products = [{ productId: 'p1', productName: 'Water', productPrice: price, quantity }];
  return {
    eventId,
    type: 'transaction.update',
    format: 'ENVELOPED',
    receivedAt: new Date(at + 1_000).toISOString(),
    occurredAt: new Date(at).toISOString(),
    transactionId,
    status,
    products,
    transaction: { transactionId, status, products },
    raw: {},
  };
}
