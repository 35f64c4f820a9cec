import type { Pool, PoolClient } from 'pg';
import { accountOf } from '../contract/accounts.js';
import { isPosition, type LoggedEvent, type StoredReplay } from '../events/event-log.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import type { AlsoInTransaction } from './postgres-history.js';

/*
 * The event log of a deployment whose events are kept in PostgreSQL
 * (DATABASE_URL without Redis): what lets a subscriber resume with `after`
 * (or Last-Event-ID) from before a restart. Each event new to the history is
 * written in the transaction that applies it (`write`), at the position the
 * history gave it; the process's ring (events/event-log.ts) serves what it
 * holds and asks this log (`readAfter`) for what is older than the ring, a
 * restart's ring being empty. Positions read `0-<position>`: the ring of such
 * a deployment takes them as its own, and no ring of its own positions (which
 * start with the time the process started) has 0 there.
 *
 * Bounded to the newest `capacity` events by a trim on a timer; the highest
 * position trimmed is kept, so a cursor older than what is left is refused
 * (EVENTS_EXPIRED) instead of being answered with a gap.
 */

/** The first part of every position this log writes. */
export const STORED_EPOCH = 0;

export const storedPosition = (position: number): string => `${STORED_EPOCH}-${position}`;

export interface PostgresEventLog {
  /** Writes the events the history took, in its transaction (PostgresHistory.applyAll's `also`). */
  write: AlsoInTransaction;
  /** The page after `cursor` (a position of this log, or an event id of `account`). */
  readAfter(cursor: string, account: string): Promise<StoredReplay>;
  /** The position of the newest event of `account` the log holds, if any (its cursor: event-log.ts `accountCursor`). */
  accountNewest(account: string): Promise<string | undefined>;
  /** Deletes what is past `capacity` now (the timer calls it). */
  trim(): Promise<void>;
  /** Stops the trim's timer. */
  close(): void;
}

export interface PostgresEventLogOptions {
  /** Events kept (EVENT_LOG_SIZE). */
  capacity: number;
  /** Most events one page holds. */
  pageEvents: number;
  /** How often what is past `capacity` is deleted (ms). */
  trimEveryMs: number;
  /** Told of a trim that failed (the next one tries again). */
  onTrimError?: (error: unknown) => void;
}

export function createPostgresEventLog(pool: Pool, options: PostgresEventLogOptions): PostgresEventLog {
  async function write(client: PoolClient, applied: ReadonlyArray<readonly [TransactionUpdateEvent, number]>): Promise<void> {
    if (applied.length === 0) return;
    await client.query(
      'INSERT INTO event_log (position, account, event_id, event) ' +
        'SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::json[])',
      [
        applied.map(([, position]) => position),
        applied.map(([event]) => accountOf(event)),
        applied.map(([event]) => event.eventId),
        applied.map(([event]) => JSON.stringify(event)),
      ],
    );
  }

  /** Where the log stands: its newest position, else the highest one trimmed. */
  async function newest(): Promise<string> {
    const { rows } = await pool.query<{ at: string }>(
      'SELECT greatest((SELECT max(position) FROM event_log), (SELECT upto FROM event_log_trimmed)) AS at',
    );
    return storedPosition(Number(rows[0]?.at ?? 0));
  }

  /** The position `cursor` names, when this log still reaches it (every event after it is kept). */
  async function positionOf(cursor: string, account: string): Promise<number | undefined> {
    if (isPosition(cursor)) {
      const [epoch, position] = cursor.split('-').map(Number);
      if (epoch !== STORED_EPOCH) return undefined;
      const { rows } = await pool.query<{ upto: string }>('SELECT upto FROM event_log_trimmed');
      return position! >= Number(rows[0]?.upto ?? 0) ? position : undefined;
    }
    const { rows } = await pool.query<{ position: string }>(
      'SELECT position FROM event_log WHERE account = $1 AND event_id = $2 ORDER BY position DESC LIMIT 1',
      [account, cursor],
    );
    return rows[0] ? Number(rows[0].position) : undefined;
  }

  async function readAfter(cursor: string, account: string): Promise<StoredReplay> {
    const after = await positionOf(cursor, account);
    if (after === undefined) return { expired: await newest() };
    const { rows } = await pool.query<{ position: string; event: TransactionUpdateEvent }>(
      'SELECT position, event FROM event_log WHERE position > $1 ORDER BY position LIMIT $2',
      [after, options.pageEvents + 1],
    );
    const events: LoggedEvent[] = rows
      .slice(0, options.pageEvents)
      .map(({ position, event }) => ({ position: storedPosition(Number(position)), event }));
    return { events, next: rows.length > options.pageEvents ? events.at(-1)?.position : undefined };
  }

  async function accountNewest(account: string): Promise<string | undefined> {
    const { rows } = await pool.query<{ at: string | null }>('SELECT max(position) AS at FROM event_log WHERE account = $1', [account]);
    const at = rows[0]?.at;
    return at === null || at === undefined ? undefined : storedPosition(Number(at));
  }

  async function trim(): Promise<void> {
    await pool.query(
      `WITH edge AS (SELECT position FROM event_log ORDER BY position DESC OFFSET $1 LIMIT 1),
            gone AS (DELETE FROM event_log WHERE position <= (SELECT position FROM edge) RETURNING position)
       UPDATE event_log_trimmed SET upto = greatest(upto, (SELECT max(position) FROM gone)) WHERE EXISTS (SELECT 1 FROM gone)`,
      [options.capacity],
    );
  }
  const timer = setInterval(() => {
    trim().catch((error: unknown) => options.onTrimError?.(error));
  }, options.trimEveryMs);
  timer.unref();

  return { write, readAfter, accountNewest, trim, close: () => clearInterval(timer) };
}
