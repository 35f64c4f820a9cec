import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import { describe, expect, it } from 'vitest';
import { recentQuery, statsQuery } from '../../src/history/history-queries.js';
import { historyEvent as event } from '../helpers/history-events.js';
import { postgresHistoryDeployment } from '../helpers/postgres.js';

/*
 * A batch's statements reach PostgreSQL pipelined: BEGIN with the reads, then
 * every write with the COMMIT, before any answer. A statement that fails must
 * still take the whole batch with it, the last one written included, and the
 * batch must apply once tried again.
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);

describe('the PostgreSQL history, pipelined', () => {
  it('keeps nothing of a batch whose last statement fails, and all of it when tried again', async () => {
    const deployment = await postgresHistoryDeployment();
    try {
      const history = await deployment.instance({
        retentionMs: 7 * 86_400_000,
        defaultCurrency: 'EUR',
        soldStatuses: ['completed'],
        now: () => T0 + 3_600_000,
      });
      const batch = [
        event('t1', 'pending', T0, 'e1'),
        event('t2', 'completed', T0 + 1_000, 'e2'),
        event('t1', 'completed', T0 + 2_000, 'e3'),
      ];
      // The event log's write comes last in the batch (`also`): here it fails in PostgreSQL.
      await expect(history.applyAll(batch, async (client) => void (await client.query('SELECT 1 / 0')))).rejects.toThrow(
        /division by zero/,
      );
      const week = statsQuery(DEFAULT_ACCOUNT, { since: new Date(T0 - 3_600_000), until: new Date(T0 + 3_600_000), interval: 'HOUR' }, T0);
      expect((await history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 10 }))).totalCount).toBe(0);
      expect(await history.records(DEFAULT_ACCOUNT, ['t1', 't2'])).toEqual([undefined, undefined]);
      expect((await history.stats(week)).count).toBe(0);
      const { rows } = await deployment.admin.query<{ n: string }>(
        'SELECT (SELECT count(*) FROM history_bucket_totals) + (SELECT count(*) FROM history_bucket_products) AS n',
      );
      expect(Number(rows[0]!.n)).toBe(0);

      const applied = await history.applyAll(batch);
      expect(applied.every((seq) => typeof seq === 'number')).toBe(true);
      const records = await history.records(DEFAULT_ACCOUNT, ['t1', 't2']);
      expect(records.map((record) => record?.status)).toEqual(['completed', 'completed']);
      const stats = await history.stats(week);
      expect(stats.count).toBe(2);
      expect(stats.byStatus).toEqual([{ status: 'completed', count: 2, total: 4 }]);
    } finally {
      await deployment.close();
    }
  });
});
