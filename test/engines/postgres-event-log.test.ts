import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import { createPostgresEventLog } from '../../src/postgres/postgres-event-log.js';
import { historyEvent as event } from '../helpers/history-events.js';
import { postgresHistoryDeployment } from '../helpers/postgres.js';

/*
 * The event log of a deployment whose events PostgreSQL keeps: written in the
 * commit that applies them (only those new to the history), read after a
 * position or an event id a page at a time, trimmed to its capacity; a
 * cursor older than what the trim left is refused rather than answered with
 * a gap.
 */

const T0 = Date.UTC(2026, 10, 28, 10, 0, 0);

describe('the event log in PostgreSQL', () => {
  it('replays after a position or an event id, page by page, and refuses what the trim took', async () => {
    const deployment = await postgresHistoryDeployment();
    const log = createPostgresEventLog(deployment.admin, { capacity: 3, pageEvents: 2, trimEveryMs: 60_000 });
    try {
      const history = await deployment.instance({ retentionMs: 7 * 86_400_000, defaultCurrency: 'EUR', soldStatuses: [], now: () => T0 });
      const sent = [0, 1, 2, 3, 4].map((n) => event(`t${n}`, 'pending', T0 + n, `e${n}`));
      const positions = await history.applyAll(sent, log.write);
      expect(positions.every((position) => typeof position === 'number')).toBe(true);
      // A redelivery changes nothing and is not logged again.
      expect(await history.applyAll([sent[1]!], log.write)).toEqual([false]);

      const first = await log.readAfter(`0-${positions[0]}`, DEFAULT_ACCOUNT);
      if ('expired' in first) throw new Error('expired');
      expect(first.events.map((logged) => logged.event.eventId)).toEqual(['e1', 'e2']);
      const second = await log.readAfter(first.next!, DEFAULT_ACCOUNT);
      if ('expired' in second) throw new Error('expired');
      expect(second.events.map((logged) => logged.event.eventId)).toEqual(['e3', 'e4']);
      expect(second.next).toBeUndefined();
      const byId = await log.readAfter('e3', DEFAULT_ACCOUNT);
      expect('events' in byId && byId.events.map((logged) => logged.event.eventId)).toEqual(['e4']);
      expect(await log.readAfter('e3', 'acme')).toEqual({ expired: `0-${positions[4]}` });

      // The trim keeps the newest three: after e1 is still whole, after e0 would have a gap.
      await log.trim();
      expect(await log.readAfter(`0-${positions[0]}`, DEFAULT_ACCOUNT)).toEqual({ expired: `0-${positions[4]}` });
      const kept = await log.readAfter(`0-${positions[1]}`, DEFAULT_ACCOUNT);
      expect('events' in kept && kept.events.map((logged) => logged.event.eventId)).toEqual(['e2', 'e3']);
    } finally {
      log.close();
      await deployment.close();
    }
  });
});
