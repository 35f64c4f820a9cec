import { describe, expect, it } from 'vitest';
import { ContractViolation, parseTransaction, parseVending, unwrapData, errorMessageOf } from '../../src/contract/index.js';

describe.concurrent('contract parsing', () => {
  const line = { productId: 'p1', productName: 'Cola', productPrice: 1.5, productThumbnail: 'https://x/y.png', productSku: 'C1', quantity: 2 };

  it('keeps fields the contract does not name, deep inside too', () => {
    const input = { transactionId: 't1', customerId: 'c1', status: 'active', products: [{ ...line, batch: 'B7' }], terminal: { id: 9 } };
    expect(parseTransaction(input)).toEqual(input);
  });

  it('accepts known fields that are absent or null, since the contract does not say which are required', () => {
    expect(parseTransaction({ transactionId: 't', status: 's', products: [{ productId: 'p', productPrice: null }] })).toEqual({
      transactionId: 't', status: 's', products: [{ productId: 'p', productPrice: null }],
    });
    expect(parseVending({ vendingId: 'v' })).toEqual({ vendingId: 'v' });
  });

  it('names the path and the problem of a value that breaks the contract', () => {
    expect(() => parseTransaction({ transactionId: 7, status: 's', products: [] })).toThrow(ContractViolation);
    expect(() => parseTransaction({ transactionId: 't', status: 's', products: [{ ...line, productPrice: '1.50' }] })).toThrow(/products\.0\.productPrice/);
    expect(() => parseVending({ vendingId: 'v', online: 'yes' })).toThrow(/online/);
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
