import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import type { Logger } from '../logging/logger.js';

/*
 * The gateway's PostgreSQL: a connection pool, and the versioned migrations
 * (migrations/, SQL files run in name order by node-pg-migrate) that every
 * instance runs at start and `npm run migrate` runs by hand. Instances that
 * start together take turns on node-pg-migrate's advisory lock, so each
 * migration runs once.
 */

/** migrations/ at the root, reached the same way from src/postgres/ and dist/postgres/. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations', import.meta.url));
/** The table node-pg-migrate notes the migrations it ran in. */
export const MIGRATIONS_TABLE = 'pgmigrations';

/** How long a connection attempt may take before the pool's caller is answered with an error (ms). */
const CONNECT_TIMEOUT_MS = 2_000;
/**
 * How long a statement may run (ms): PostgreSQL cancels it past this, and the client gives up on
 * an answer this late (a database that stalls with its connections open must not hold a request).
 */
const STATEMENT_TIMEOUT_MS = 3_000;

export function createPostgresPool(databaseUrl: string, logger: Logger): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'vending-gateway',
    // The history's statements are short and planned as such; JIT compiling one (its cost estimate passes jit_above_cost
    // at a few hundred thousand rows) takes longer than running it.
    options: '-c jit=off',
    // Statements given to a connection together are written at once, not each after the answer to the one before:
    // a webhook's commit waits for a database transaction of a dozen statements, which would otherwise wait for as
    // many turns of a busy event loop.
    pipeline: true,
  });
  // An idle connection that breaks (the database restarted) is dropped by the pool; without a listener it would end the process.
  // Its error carries the client, connection parameters included: only its code and message are logged.
  pool.on('error', (error: Error & { code?: string }) =>
    logger.warn({ code: error.code, reason: error.message }, 'a PostgreSQL connection broke; the pool makes a new one when needed'),
  );
  // A connection checked out and between statements hears its break alone (the pool listens to idle ones only, the
  // statement under way fails on its own): each connection keeps a listener for its whole life, or that break would be
  // an error nobody hears, which ends the process. Whoever holds it finds out from its next statement.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** Runs the migrations not run yet; resolves the names of those it ran. */
/**
 * A connection of its own for node-pg-migrate, ended (and awaited) here: the runner ends the one it opens itself
 * without waiting, so a server that closes it meanwhile (a restart, a dropped database) would emit an error nobody
 * hears, which ends the process.
 */
export async function withMigrationClient<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export async function migrate(databaseUrl: string, logger: Logger): Promise<string[]> {
  const ran = await withMigrationClient(databaseUrl, (dbClient) =>
    runner({
      dbClient,
      dir: MIGRATIONS_DIR,
      direction: 'up',
      migrationsTable: MIGRATIONS_TABLE,
      checkOrder: true,
      // Several instances starting at once: the later ones wait for the first, then find nothing to run.
      advisoryLockMode: 'wait',
      logger: {
        debug: () => {},
        info: (message: string) => logger.debug({ migration: message }, 'migration'),
        warn: (message: string) => logger.warn({ migration: message }, 'migration'),
        // What failed is thrown as well, and its caller says so once: here it would be a stack trace at every try.
        error: (message: string) => logger.debug({ migration: message }, 'migration'),
      },
    }),
  );
  for (const migration of ran) logger.info({ migration: migration.name }, 'PostgreSQL migration applied');
  return ran.map((migration) => migration.name);
}

/**
 * Whether PostgreSQL may answer otherwise when asked again: the connection
 * failed or broke (no SQLSTATE, or class 08), the server is short of
 * resources (53), shutting down or cancelled the statement (57), an internal
 * I/O error (58), or the transaction was rolled back (40). Anything else (a
 * value the database refuses, a missing table) fails the same way again.
 */
export function isTransientPostgresError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return ['08', '40', '53', '57', '58'].includes(code.slice(0, 2)) || code === '55P03';
}

export interface Database {
  pool: pg.Pool;
  /** Resolves once the migrations ran (tried again every `retryMs` while the database is away). */
  migrated: Promise<void>;
  isMigrated(): boolean;
  /** Whether the database answered the last look (one every `retryMs`). */
  answering(): boolean;
  close(): Promise<void>;
}

/** What failed, in one line: a connection's error carries a stack and its parameters, neither of use in a log line. */
const reasonOf = (error: unknown): string => {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return [code, message].filter((part) => typeof part === 'string' && part !== '').join(': ') || String(error);
};

/** The pool, and the migrations run in the background until they succeed, so a database that is away does not stop the start. */
export function openDatabase(databaseUrl: string, logger: Logger, retryMs: number): Database {
  const pool = createPostgresPool(databaseUrl, logger);
  let closed = false;
  let done = false;
  const migrated = (async () => {
    for (let attempt = 1; !closed; attempt += 1) {
      try {
        await migrate(databaseUrl, logger);
        done = true;
        if (attempt > 1) logger.info({ attempts: attempt }, 'PostgreSQL migrations ran');
        return;
      } catch (error) {
        if (attempt === 1) logger.warn({ reason: reasonOf(error) }, 'PostgreSQL migrations could not run yet; trying again until they do');
        await sleep(retryMs, undefined, { ref: false });
      }
    }
  })();
  // A gateway closed before the migrations ran leaves them for the next start: nobody waits for them.
  migrated.catch(() => {});
  let answering = true;
  let looking = false;
  const look = setInterval(() => {
    if (looking) return;
    looking = true;
    pool
      .query('SELECT 1')
      .then(
        () => {
          if (!answering) logger.info('PostgreSQL answers again');
          answering = true;
        },
        (error: unknown) => {
          // Once when it stops answering, not at every look.
          if (answering) logger.warn({ reason: reasonOf(error) }, 'PostgreSQL does not answer; the history waits for it');
          answering = false;
        },
      )
      .finally(() => (looking = false));
  }, retryMs);
  look.unref();
  return {
    pool,
    migrated,
    isMigrated: () => done,
    answering: () => answering,
    async close() {
      closed = true;
      clearInterval(look);
      await pool.end();
    },
  };
}
