import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import { describe, expect, it } from 'vitest';
import { BATCH, createHistoryFeed } from '../../src/history/history-feed.js';
import { recentQuery } from '../../src/history/history-queries.js';
import { createLogger } from '../../src/logging/logger.js';
import { isTransientPostgresError } from '../../src/postgres/postgres-database.js';
import { historyEvent as event } from '../helpers/history-events.js';
import { postgresHistoryDeployment } from '../helpers/postgres.js';

/*
 * The in-process feed applies what waits in batches (one database transaction
 * each). A batch PostgreSQL refuses for good, because of one event it cannot
 * store, is applied again one event at a time: that event alone is skipped,
 * and its push alone is refused.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);

describe('the history feed in batches', () => {
  it('applies a backlog in batches, and skips only the event the database refuses', async () => {
    const deployment = await postgresHistoryDeployment();
    try {
      const history = await deployment.instance({
        retentionMs: 7 * 86_400_000,
        defaultCurrency: 'EUR',
        soldStatuses: [],
        now: () => T0 + 3_600_000,
      });
      const batches: number[] = [];
      const logger = createLogger('silent');
      const feed = createHistoryFeed({
        apply: (events) => {
          batches.push(events.length);
          return history.applyAll(events);
        },
        transient: isTransientPostgresError,
        logger,
        retryMs: 50,
        maxQueued: 10_000,
      });
      const count = 2 * BATCH + 10;
      // A NUL character: PostgreSQL's text cannot hold it (22021), whatever is tried again.
      const kept = Array.from({ length: count }, (_, i) =>
        feed.push(event(i === 150 ? 'bad\u0000id' : `t${i}`, i % 3 ? 'completed' : 'pending', T0 + i * 1_000, `e${i}`)).then(
          () => 'kept',
          (error: Error) => error.message,
        ),
      );
      // Each push is told what became of its event: the refused one alone is not kept (its webhook gets 503).
      const outcomes = await Promise.all(kept);
      expect(outcomes.filter((outcome) => outcome !== 'kept')).toEqual(['the history refused the event']);
      expect(outcomes[150]).toBe('the history refused the event');
      await feed.close(10_000);
      expect((await history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 1 }))).totalCount).toBe(count - 1);
      const records = await history.records(
        DEFAULT_ACCOUNT,
        Array.from({ length: count }, (_, i) => `t${i}`),
      );
      expect(records.map((r, i) => (r ? i : -1)).filter((i) => i < 0)).toEqual([-1]);
      expect(records[150]).toBeUndefined();
      // The first push starts a batch of one; the rest wait and go by BATCH, the refused batch once more event by event.
      expect(Math.max(...batches)).toBe(BATCH);
      expect(batches.filter((n) => n === 1).length).toBeGreaterThanOrEqual(BATCH);
    } finally {
      await deployment.close();
    }
  });
});
