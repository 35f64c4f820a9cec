import SchemaBuilder from '@pothos/core';
import { DateTimeResolver, JSONObjectResolver, JSONResolver } from 'graphql-scalars';
import type { GatewayContext } from './context.js';

export const builder = new SchemaBuilder<{
  Context: GatewayContext;
  DefaultFieldNullability: false;
  Scalars: {
    JSON: { Input: unknown; Output: unknown };
    JSONObject: { Input: Record<string, unknown>; Output: Record<string, unknown> };
    DateTime: { Input: Date; Output: Date | string };
    ID: { Input: string; Output: string };
  };
}>({ defaultFieldNullability: false });

builder.addScalarType('JSON', JSONResolver);
builder.addScalarType('JSONObject', JSONObjectResolver);
builder.addScalarType('DateTime', DateTimeResolver);

builder.queryType({ description: 'Reads of the vending and transaction service.' });
builder.mutationType({ description: 'Changes sent to the vending and transaction service.' });
