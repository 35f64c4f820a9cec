/* A CommonJS consumer: require() gets the same documents and types. */
import client = require('@vending-gateway/client');

export const operationName: string | undefined = client.TransactionDetailDocument.definitions[0]?.kind;
export type Detail = client.TransactionDetailQuery;
