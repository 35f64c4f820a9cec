import { specifiedDirectives, type GraphQLSchema } from 'graphql';
import { GraphQLDeferDirective, GraphQLStreamDirective } from '@graphql-tools/utils';
import { builder } from './builder.js';
import './types/product-line.js';
import './types/transaction.js';
import './types/vending.js';
import './types/transaction-event.js';
import './types/vending-event.js';
import './types/transaction-history.js';
import './types/transaction-stats.js';

/**
 * The gateway's schema, built once from the Pothos types, with `@defer` and `@stream` (served by yoga's
 * defer-stream plugin, graphql-server.ts): declared here, so that the SDL in schema/ is the one served.
 */
export const schema: GraphQLSchema = builder.toSchema({
  sortSchema: true,
  directives: [...specifiedDirectives, GraphQLDeferDirective, GraphQLStreamDirective],
});
