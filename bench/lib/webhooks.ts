import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { transactions, type Transaction } from './fixtures.js';

export interface Posted {
  status: number;
  /** POST sent → answer fully read. */
  ms: number;
  /** performance.now() when the POST was issued. */
  at: number;
}

export type WebhookTransaction = Pick<Transaction, 'transactionId' | 'status' | 'products'>;

export const statusFor = (n: number): string => (n % 2 === 0 ? 'pending' : 'completed');

/** The raw broadcaster's frame, shaped as the gateway's `next` so one sink reads both; S4 gives a UUID `id` as the gateway's. */
export const rawMessage = (eventId: string, status: string, id = '1'): string =>
  JSON.stringify({ id, type: 'next', payload: { data: { transactionUpdated: { eventId, status } } } });

/**
 * `post(id, n)`: fixture transaction `n % 200` under envelope id `id`, its status derived from `n`; to the raw broadcaster
 * (`raw`), the frame of that event itself to /broadcast, under subscription id `subscriptionId`.
 */
export function webhookSender(baseUrl: string, connections = 16, raw = false) {
  const pool = new Pool(baseUrl, { connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
  async function send(path: string, body: string, headers: Record<string, string>): Promise<Posted> {
    const at = performance.now();
    const response = await pool.request({ path, method: 'POST', headers, body });
    await response.body.dump();
    return { status: response.statusCode, ms: performance.now() - at, at };
  }
  /** An update of `transaction` under envelope id `id`, dated `at` (the envelope's timestamp; default now). */
  const postUpdate = (id: string, transaction: WebhookTransaction, at?: Date) => {
    const request = buildWebhookRequest({ form: 'enveloped', id, transaction, ...(at ? { at } : {}) });
    return send('/webhooks', request.body, request.headers);
  };
  return {
    post(id: string, n: number, subscriptionId?: string) {
      if (raw) return send('/broadcast', rawMessage(id, statusFor(n), subscriptionId), { 'content-type': 'application/json' });
      const t = transactions[n % transactions.length]!;
      return postUpdate(id, { transactionId: t.transactionId, status: statusFor(n), products: t.products });
    },
    postUpdate,
    // destroy, not close: after a capped wait, answers still pending are abandoned rather than awaited.
    close: () => pool.destroy(),
  };
}
