import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { acceptedOutright, productLineSchema, transactionSchema, vendingSchema } from '../../src/contract/contract.js';
import { runs } from './arbitraries.js';

/*
 * The tolerant reader lets a field's value through without running its schema
 * when the schema is a plain JSON type (acceptedOutright). That shortcut must
 * never accept what the schema refuses: held here against the schema itself,
 * field by field, over any value (and the numbers JSON cannot carry).
 */

const FIELDS: Array<[string, z.ZodType]> = [productLineSchema, transactionSchema, vendingSchema].flatMap((schema) =>
  Object.entries(schema.shape as Record<string, z.ZodType>).map(([field, check]): [string, z.ZodType] => [field, check]),
);

const anyValue = fc.oneof(
  fc.anything(),
  fc.constantFrom<unknown>(undefined, null, Number.NaN, Infinity, -Infinity, -0, '', 0, true, false, [], {}),
  fc.double(),
  fc.string(),
);

describe('what the tolerant reader accepts outright', () => {
  it('is never what the field schema refuses', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FIELDS), anyValue, ([, schema], value) => {
        if (acceptedOutright(schema, value)) expect(schema.safeParse(value).success).toBe(true);
      }),
      runs(5_000),
    );
  });

  it('covers the plain fields of a contract answer (else the reader runs every schema again)', () => {
    const typical: Record<string, unknown> = {
      productId: 'p1',
      productName: 'Cola',
      productPrice: 2.5,
      quantity: null,
      transactionId: 't1',
      customerId: undefined,
      status: 'PAID',
      online: true,
    };
    for (const [field, schema] of FIELDS) {
      if (field in typical) expect([field, acceptedOutright(schema, typical[field])]).toEqual([field, true]);
    }
  });
});
