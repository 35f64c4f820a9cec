/*
 * A consumer's Apollo Client program against the packed @vending-gateway/client.
 * The @ts-expect-error lines fail the check if the documents lost their types
 * (an `any` accepts everything, so the directive would be unused).
 */
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import {
  LiveTransactionsDocument,
  TransactionDetailDocument,
  UpdateTransactionPaymentDocument,
  type LiveTransactionsSubscription,
  type TransactionDetailQuery,
} from '@vending-gateway/client';
import type { Equal } from './checks.js';

const client = new ApolloClient({
  link: new HttpLink({ uri: 'http://localhost:4000/graphql', headers: { authorization: 'Bearer dev-key' } }),
  cache: new InMemoryCache(),
});

export async function detail(id: string): Promise<number | undefined> {
  const { data } = await client.query({ query: TransactionDetailDocument, variables: { id } });
  const typed: Equal<typeof data, TransactionDetailQuery | undefined> = true;
  void typed;
  // @ts-expect-error the variable is `id`, a string
  await client.query({ query: TransactionDetailDocument, variables: { id: 1 } });
  // @ts-expect-error the selection has no such field
  void data?.transaction?.notAField;
  return data?.transaction?.total;
}

export async function pay(transactionId: string): Promise<string | undefined> {
  const { data } = await client.mutate({
    mutation: UpdateTransactionPaymentDocument,
    variables: { transactionId, payment: { status: 'PAID' } },
  });
  // @ts-expect-error payment is required
  await client.mutate({ mutation: UpdateTransactionPaymentDocument, variables: { transactionId } });
  return data?.updateTransactionPayment.transaction?.status;
}

export function live(onEvent: (event: LiveTransactionsSubscription['transactionUpdated']) => void): () => void {
  const subscription = client.subscribe({ query: LiveTransactionsDocument }).subscribe(({ data }) => {
    if (data) onEvent(data.transactionUpdated);
  });
  return () => subscription.unsubscribe();
}
