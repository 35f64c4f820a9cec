import { SYSTEM_IDENTITY, type Backend, type Credential } from '../backends/backend.js';
import { driftsIn } from '../contract/contract.js';
import type { Logger } from '../logging/logger.js';
import type { HistoryStore } from './history-store.js';

/*
 * Payment updates made through the gateway, by GraphQL or REST, go into the
 * history: the backend's one `updatePayment` is where both pass.
 * What the update set is recorded by field name only: its values (customer
 * and payment details) stay with the service.
 */

/**
 * The backend with each successful payment update recorded, in the history of
 * the caller's account (the history its reads show it). A transaction the
 * history has no record of is read back once (the gateway's own read, with the caller's key) to start
 * one. Recording never fails the update the service already took: a failure
 * is logged.
 */
export function recordingPayments(
  inner: Backend,
  history: HistoryStore,
  accountOf: (credential: Credential) => Promise<string>,
  logger: Logger,
): Backend {
  return {
    ...inner,
    async updatePayment(id, payment, credential, scope) {
      const answer = await inner.updatePayment(id, payment, credential, scope);
      const at = Date.now();
      let account: string | undefined;
      try {
        account = await accountOf(credential);
        const note = { account, transactionId: id, fields: Object.keys(payment).sort(), at };
        if (!(await history.notePayment(note))) {
          // The gateway's own read, for its history; with the caller's key, which the service answers (forward mode has no other).
          const transaction = await inner.getTransaction(id, { authorization: credential.authorization, identity: SYSTEM_IDENTITY }, scope);
          // A read-back the service sent with fields the gateway could not read would put made-up values in the history.
          const unread = driftsIn(transaction).filter((drift) => drift.kind !== 'converted');
          if (unread.length > 0)
            logger.warn(
              { transactionId: id, account, fields: unread.map(({ resource, field }) => `${resource}.${field}`) },
              "a payment update was not recorded in the history: the service's transaction has fields the gateway could not read",
            );
          else await history.notePayment(note, transaction);
        }
      } catch (error) {
        logger.warn({ err: error, transactionId: id, account }, 'a payment update could not be recorded in the history');
      }
      return answer;
    },
  };
}
