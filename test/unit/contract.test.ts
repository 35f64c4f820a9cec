import { describe, expect, it } from 'vitest';
import {
  ContractViolation,
  driftOf,
  driftsIn,
  parseTransaction,
  parseVending,
  unwrapData,
  errorMessageOf,
} from '../../src/contract/contract.js';

describe.concurrent('contract parsing', () => {
  const line = {
    productId: 'p1',
    productName: 'Cola',
    productPrice: 1.5,
    productThumbnail: 'https://x/y.png',
    productSku: 'C1',
    quantity: 2,
  };

  it('keeps fields the contract does not name, deep inside too', () => {
    const input = { transactionId: 't1', customerId: 'c1', status: 'active', products: [{ ...line, batch: 'B7' }], terminal: { id: 9 } };
    expect(parseTransaction(input)).toEqual(input);
  });

  it('accepts known fields that are absent or null, since the contract does not say which are required', () => {
    expect(parseTransaction({ transactionId: 't', status: 's', products: [{ productId: 'p', productPrice: null }] })).toEqual({
      transactionId: 't',
      status: 's',
      products: [{ productId: 'p', productPrice: null }],
    });
    expect(parseVending({ vendingId: 'v' })).toEqual({ vendingId: 'v' });
  });

  it('reads a resource that drifted field by field: lossless conversions made, other drifts left out and remembered', () => {
    const tx = parseTransaction({
      transactionId: 7,
      products: [{ ...line, productPrice: '1.50', quantity: '2' }],
      status: true,
      note: 'kept',
    });
    expect(tx).toEqual({ transactionId: '7', products: [{ ...line, productPrice: 1.5, quantity: 2 }], note: 'kept' });
    expect(Object.keys(tx)).toEqual(['transactionId', 'products', 'note']);
    expect(driftOf(tx, 'status')).toEqual({
      resource: 'transaction',
      field: 'status',
      kind: 'wrong_type',
      sent: 'boolean',
      expected: 'string',
    });
    expect(driftsIn(tx).map(({ resource, field, kind }) => `${resource}.${field}:${kind}`)).toEqual([
      'transaction.transactionId:converted',
      'transaction.status:wrong_type',
      'product_line.productPrice:converted',
      'product_line.quantity:converted',
    ]);
    const vending = parseVending({ vendingId: 'v', online: 'yes' });
    expect(vending).toEqual({ vendingId: 'v' });
    expect(driftOf(vending, 'online')?.kind).toBe('wrong_type');
    expect(driftOf(parseTransaction({ transactionId: 't', products: [] }), 'status')?.kind).toBe('missing');
    expect(() => parseTransaction('a text')).toThrow(ContractViolation);
  });

  it('carries any products value on a vending, whatever the view', () => {
    const planogram = { trays: [{ tray: 'A', slots: [] }] };
    expect(parseVending({ vendingId: 'v', products: planogram }).products).toEqual(planogram);
  });

  it('unwraps the data envelope and reads the error envelope', () => {
    expect(unwrapData({ data: [1] })).toEqual([1]);
    expect(() => unwrapData({ items: [] })).toThrow(ContractViolation);
    expect(errorMessageOf({ errors: { message: 'nope' } })).toBe('nope');
    expect(errorMessageOf({ errors: [{ message: 'x' }] })).toBeUndefined();
    expect(errorMessageOf('<html>')).toBeUndefined();
  });
});
