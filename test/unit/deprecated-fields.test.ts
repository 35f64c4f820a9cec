import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getNamedType, isObjectType, NoDeprecatedCustomRule, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../src/graphql/schema.js';

/*
 * The figures that add amounts of different currencies together are kept (their
 * names are a contract) but deprecated, pointing to `byCurrency`; the client
 * operations of schema/operations/ (the dashboard's among them) select none of
 * them, nor any other deprecated field.
 */

const OPERATIONS = 'schema/operations';

const deprecation = (type: string, field: string) => {
  const named = schema.getType(type);
  if (!isObjectType(named)) throw new Error(`${type} is not an object type`);
  return named.getFields()[field]?.deprecationReason;
};

describe('figures across currencies', () => {
  it('are deprecated where they add currencies together, with a reason that points to byCurrency', () => {
    const stats = schema.getQueryType()!.getFields().transactionStats!.type;
    const statsType = getNamedType(stats).name;
    for (const [type, field] of [
      [statsType, 'totalSold'],
      ['TransactionStatsInterval', 'totalSold'],
      ['StatusTotal', 'total'],
      ['ProductSales', 'amount'],
    ] as const) {
      expect(deprecation(type, field), `${type}.${field}`).toMatch(/byCurrency/);
    }
  });

  it('are not deprecated within one currency', () => {
    for (const [type, field] of [
      ['CurrencyStats', 'totalSold'],
      ['CurrencyTotal', 'totalSold'],
      ['CurrencyStatusTotal', 'total'],
      ['CurrencyProductSales', 'amount'],
    ] as const) {
      expect(deprecation(type, field), `${type}.${field}`).toBeUndefined();
    }
  });

  it('are selected by none of the client operations', () => {
    const files = readdirSync(OPERATIONS).filter((name) => name.endsWith('.graphql'));
    const sources = files.map((name) => readFileSync(join(OPERATIONS, name), 'utf8')).join('\n');
    const errors = validate(schema, parse(sources), [NoDeprecatedCustomRule]).map((error) => error.message);
    expect(errors).toEqual([]);
  });
});
