import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import { describe, expect, it } from 'vitest';
import { historyEvent as event } from '../helpers/history-events.js';
import { postgresHistoryDeployment } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * A connection that breaks while an event is being applied on it (the
 * database restarted, a proxy cut) fails that apply, which the feed tries
 * again; it must not end the process. pg emits `error` on a client whose
 * connection ends unexpectedly, besides failing the statement under way, and
 * the pool hears only idle clients: an error nobody hears is an uncaught
 * exception (vitest fails the run on one).
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);

describe('PostgreSQL history, a connection broken under an apply', () => {
  it('fails that apply, ends no process, and applies again once asked', async () => {
    const deployment = await postgresHistoryDeployment();
    try {
      const history = await deployment.instance({
        retentionMs: 7 * 86_400_000,
        defaultCurrency: 'EUR',
        soldStatuses: [],
        now: () => T0 + 60_000,
      });
      await history.apply(event('held', 'pending', T0, 'e1'));
      // Another session holds the record's row: the next apply waits on it, its connection checked out.
      const holder = await deployment.admin.connect();
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM history_transactions WHERE transaction_id = 'held' FOR UPDATE");
      const applying = history.apply(event('held', 'completed', T0 + 1_000, 'e2'));
      // Its failure is expected, and held from now on: the terminate's own answer may come after the apply has failed,
      // and a failure nobody holds yet is an unhandled rejection, whichever comes first.
      const failed = expect(applying).rejects.toThrow();
      let waiting: number | undefined;
      for (let tries = 0; waiting === undefined && tries < 200; tries += 1) {
        const { rows } = await deployment.admin.query<{ pid: number }>(
          // The apply's session only: on a busy machine another session of this database may wait on a lock too.
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' " +
            "AND pid <> pg_backend_pid() AND pid <> $1 AND query LIKE '%history_transactions%'",
          [holderPid],
        );
        waiting = rows[0]?.pid;
        if (waiting === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(waiting).toBeDefined();
      await deployment.admin.query('SELECT pg_terminate_backend($1)', [waiting]);
      await failed;
      await holder.query('ROLLBACK');
      holder.release();
      // Applied when asked again, on a new connection.
      await history.apply(event('held', 'completed', T0 + 1_000, 'e2'));
      expect((await history.records(DEFAULT_ACCOUNT, ['held']))[0]?.status).toBe('completed');
    } finally {
      await deployment.close();
    }
  });

  it('hears the break of a connection checked out between two statements, which fails the next one only', async () => {
    const deployment = await postgresHistoryDeployment();
    try {
      const pool = deployment.pool();
      const client = await pool.connect();
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // Nothing runs on it: PostgreSQL's word that it ends comes as an `error` event alone.
      let heard = false;
      client.once('end', () => (heard = true));
      await deployment.admin.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(await waitFor(() => heard, 5_000)).toBe(true);
      await expect(client.query('SELECT 1')).rejects.toThrow();
      client.release(true);
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    } finally {
      await deployment.close();
    }
  });
});
