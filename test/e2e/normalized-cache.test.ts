import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TransactionDetailDocument,
  UpdateTransactionPaymentDocument,
  VendingDetailDocument,
  FleetOverviewDocument,
} from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * Apollo Client with its default InMemoryCache (no typePolicies, no
 * keyFields) and the repository's typed documents: a read, the payment
 * mutation, and a read again from the cache alone. The cache merges the
 * mutation's transaction into the one read before because both carry
 * `__typename` and `id`, the key its default dataIdFromObject (and urql's
 * Graphcache) uses.
 */
const ID = 'e96a1bb8-6da9-49e4-9881-15f7e15d33a3';
let gw: RunningGateway;
let requests: string[];

beforeAll(async () => {
  gw = await startGateway({ SIMULATOR: 'off' });
});
afterAll(async () => {
  await gw.close();
});

function apollo(): ApolloClient {
  requests = [];
  const link = new HttpLink({
    uri: `${gw.url}/graphql`,
    headers: { authorization: TEST_KEY },
    fetch: async (input, init) => {
      requests.push(String((JSON.parse(String(init?.body)) as { operationName?: string }).operationName));
      return fetch(input, init);
    },
  });
  return new ApolloClient({ link, cache: new InMemoryCache() });
}

describe("Apollo Client's default cache", () => {
  it('shows the payment mutation in the transaction read before, without configuration or a refetch', async () => {
    const client = apollo();
    const before = await client.query({ query: TransactionDetailDocument, variables: { id: ID } });
    expect(before.data?.transaction).toMatchObject({ __typename: 'Transaction', id: ID, transactionId: ID });
    expect((before.data?.transaction?.extra as Record<string, unknown> | null)?.payment).toBeUndefined();

    const payment = { paymentStatus: 'captured', customerId: 'c-42' };
    const mutation = await client.mutate({ mutation: UpdateTransactionPaymentDocument, variables: { transactionId: ID, payment } });
    expect(mutation.data?.updateTransactionPayment.transaction).toMatchObject({ id: ID });

    // The cache alone: no request is made, and the transaction is the mutation's.
    const after = await client.query({ query: TransactionDetailDocument, variables: { id: ID }, fetchPolicy: 'cache-only' });
    expect((after.data?.transaction?.extra as Record<string, unknown> | null)?.payment).toEqual(payment);
    expect(requests).toEqual(['TransactionDetail', 'UpdateTransactionPayment']);
    // One entity, keyed by type and id.
    expect(Object.keys(client.cache.extract() as Record<string, unknown>).filter((key) => key.startsWith('Transaction:'))).toEqual([
      `Transaction:${ID}`,
    ]);
  });

  it('keys a vending by its id too, so the fleet list and the detail view share it', async () => {
    const client = apollo();
    const fleet = await client.query({ query: FleetOverviewDocument, variables: { first: 1 } });
    const vendingId = fleet.data!.vendings.nodes[0]!.vendingId;
    const detail = await client.query({ query: VendingDetailDocument, variables: { id: vendingId } });
    expect(detail.data?.vending).toMatchObject({ __typename: 'Vending', id: vendingId });
    expect((client.cache.extract() as Record<string, unknown>)[`Vending:${vendingId}`]).toMatchObject({
      vendingId,
      productCount: expect.any(Number),
      products: expect.any(Array),
    });
  });
});
