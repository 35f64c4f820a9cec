/* Checked without skipLibCheck: the package's own declarations must compile under a consumer's strict settings. */
import { print } from 'graphql';
import { TransactionDetailDocument } from '@vending-gateway/client';

export const text: string = print(TransactionDetailDocument);
