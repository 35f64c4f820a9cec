/*
 * A consumer's urql program against the packed @vending-gateway/client; the
 * @ts-expect-error lines prove the variables are typed.
 */
import { Client, cacheExchange, fetchExchange } from '@urql/core';
import {
  FleetOverviewDocument,
  LiveTransactionDocument,
  UpdateTransactionPaymentDocument,
  type FleetOverviewQuery,
  type LiveTransactionSubscription,
  type WebhookFormat,
} from '@vending-gateway/client';
import type { Equal } from './checks.js';

const client = new Client({
  url: 'http://localhost:4000/graphql',
  exchanges: [cacheExchange, fetchExchange],
  fetchOptions: { headers: { authorization: 'Bearer dev-key' } },
});

export async function fleet(): Promise<string[]> {
  const result = await client.query(FleetOverviewDocument, { first: 10, filter: { online: true } }).toPromise();
  const typed: Equal<typeof result.data, FleetOverviewQuery | undefined> = true;
  void typed;
  // @ts-expect-error `first` is a number
  await client.query(FleetOverviewDocument, { first: 'ten' }).toPromise();
  return result.data?.vendings.nodes.map((vending) => vending.vendingId) ?? [];
}

export async function pay(transactionId: string): Promise<number | undefined> {
  const result = await client.mutation(UpdateTransactionPaymentDocument, { transactionId, payment: { status: 'PAID' } }).toPromise();
  return result.data?.updateTransactionPayment.transaction?.total;
}

export function live(transactionId: string, onEvent: (format: WebhookFormat) => void): () => void {
  const { unsubscribe } = client.subscription(LiveTransactionDocument, { transactionId }).subscribe((result) => {
    const event: LiveTransactionSubscription['transactionUpdated'] | undefined = result.data?.transactionUpdated;
    if (event) onEvent(event.format);
  });
  return unsubscribe;
}
