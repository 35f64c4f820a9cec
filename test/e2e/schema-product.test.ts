import { readFileSync } from 'node:fs';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  isEnumType,
  isInputObjectType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedScalarType,
  lexicographicSortSchema,
  printSchema,
  type IntrospectionQuery,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../src/graphql/schema.js';
import { answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

const checkedIn = readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8');
const canonical = (sdl: string) => printSchema(lexicographicSortSchema(buildSchema(sdl)));

let running: RunningGateway;
beforeAll(async () => {
  running = await answeringGateway();
});
afterAll(() => running.close());

describe('schema/schema.graphql', () => {
  it('equals the SDL the gateway serves by introspection', async () => {
    const response = await running.fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: TEST_KEY },
      body: JSON.stringify({ query: getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, inputValueDeprecation: true }) }),
    });
    const { data } = (await response.json()) as { data: IntrospectionQuery };
    const served = printSchema(lexicographicSortSchema(buildClientSchema(data)));
    expect(served).toBe(canonical(checkedIn));
  });

  it('describes every type, field, argument and enum value', () => {
    const missing: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
      if (!type.description) missing.push(type.name);
      if (isObjectType(type) || isInputObjectType(type)) {
        for (const field of Object.values(type.getFields())) {
          if (!field.description) missing.push(`${type.name}.${field.name}`);
          for (const arg of 'args' in field ? field.args : []) {
            if (!arg.description) missing.push(`${type.name}.${field.name}(${arg.name})`);
          }
        }
      }
      if (isEnumType(type)) {
        for (const value of type.getValues()) if (!value.description) missing.push(`${type.name}.${value.name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
