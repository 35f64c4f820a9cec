import type { GraphQLSchema } from 'graphql';
import { builder } from './builder.js';
import './types/product-line.js';
import './types/transaction.js';
import './types/vending.js';
import './types/transaction-event.js';
import './types/vending-event.js';
import './types/transaction-history.js';
import './types/transaction-stats.js';

/** The gateway's schema, built once from the Pothos types. */
export const schema: GraphQLSchema = builder.toSchema({ sortSchema: true });
