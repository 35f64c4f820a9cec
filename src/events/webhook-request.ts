import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Transaction } from '../contract/contract.js';

/*
 * Builds the POST the service would send for a transaction update (contract
 * part 6), in either form, signed the Standard Webhooks way when a secret is
 * given. Used by `npm run webhook` and by tests.
 */

export type WebhookForm = 'legacy' | 'enveloped';

export interface WebhookRequestOptions {
  form: WebhookForm;
  transaction: Pick<Transaction, 'transactionId' | 'status' | 'products'> & Record<string, unknown>;
  /** `whsec_…`; unsigned when absent. */
  secret?: string | undefined;
  /** The `webhook-id` header (and the envelope id); made up when absent. */
  id?: string;
  /** @default now */
  at?: Date;
}

export interface WebhookRequest {
  body: string;
  headers: Record<string, string>;
}

export function buildWebhookRequest(options: WebhookRequestOptions): WebhookRequest {
  const id = options.id ?? `msg_${randomUUID()}`;
  const at = options.at ?? new Date();
  const payload =
    options.form === 'legacy'
      ? { event: 'transaction', data: options.transaction }
      : { id, type: 'transaction.update', timestamp: at.toISOString(), data: options.transaction };
  const body = JSON.stringify(payload);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.secret) {
    headers['webhook-id'] = id;
    headers['webhook-timestamp'] = String(Math.floor(at.getTime() / 1000));
    headers['webhook-signature'] = new Webhook(options.secret).sign(id, at, body);
  }
  return { body, headers };
}
