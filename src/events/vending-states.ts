import { accountOf } from '../contract/accounts.js';
import type { TransactionUpdateEvent } from './normalize.js';
import { vendingUpdateOf } from './vending-events.js';

/*
 * What this instance heard of each machine's last change: since when it is
 * offline, for `Vending.offlineSince` on any read of the machine. Fed by the
 * machines' log, which every instance hears in full (in log order), so
 * instances agree once each has heard a change; an instance started after a
 * machine went offline learns it at the machine's next change.
 */

export interface VendingStates {
  /** Since when the account's machine is offline, as its last published change said; undefined when not known to be. */
  offlineSince(account: string, vendingId: string): string | undefined;
  /** Takes a change from the machines' log. */
  note(event: TransactionUpdateEvent): void;
}

/** Machines remembered at most (a fleet's size; the oldest heard go first). */
const MOST_MACHINES = 100_000;

export function createVendingStates(): VendingStates {
  const offline = new Map<string, string>();
  return {
    offlineSince: (account, vendingId) => offline.get(`${account}:${vendingId}`),
    note(event) {
      const update = vendingUpdateOf(event);
      const key = `${accountOf(event)}:${update.vendingId}`;
      offline.delete(key);
      if (update.offlineSince !== null) offline.set(key, update.offlineSince);
      if (offline.size > MOST_MACHINES) offline.delete(offline.keys().next().value as string);
    },
  };
}
