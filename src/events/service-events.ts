import { randomUUID } from 'node:crypto';
import type { Transaction } from '../contract/contract.js';
import { normalizeWebhook, type TransactionUpdateEvent } from './normalize.js';

/**
 * The event the service would send for a changed transaction (contract part
 * 6, enveloped form), for backends that are the service themselves (memory).
 */
export function serviceEventFor(transaction: Transaction, at: Date = new Date()): TransactionUpdateEvent {
  const body = { id: `evt_${randomUUID()}`, type: 'transaction.update', timestamp: at.toISOString(), data: transaction };
  const result = normalizeWebhook(body, { receivedAt: at.toISOString(), madeId: body.id });
  if (!result.ok) throw new Error(`memory backend produced an unreadable event: ${result.problems.join('; ')}`);
  return result.event;
}
