import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createLogger } from '../../src/logging/logger.js';
import { createPostgresPool, migrate } from '../../src/postgres/postgres-database.js';
import { createPostgresHistory, type PostgresHistory, type PostgresHistoryOptions } from '../../src/postgres/postgres-history.js';

/*
 * A database of its own for each test, on the machine's PostgreSQL
 * (TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres: the
 * `postgres` user over TCP, trust authentication, as .ci/run sets it up),
 * dropped when the test is done, whoever still holds connections to it.
 */

export const testAdminUrl = (): string => process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  /** The address of the new, empty database. */
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function asAdmin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: testAdminUrl() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function testDatabase(): Promise<TestDatabase> {
  const name = `vg_test_${randomBytes(6).toString('hex')}`;
  await asAdmin(`CREATE DATABASE ${name}`);
  const url = new URL(testAdminUrl());
  url.pathname = `/${name}`;
  return { url: url.toString(), name, drop: () => asAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export interface PostgresHistoryDeployment {
  database: TestDatabase;
  /** A pool of the test's own, for looking at tables. */
  admin: pg.Pool;
  /** An instance's store (its own pool unless given one, its own sweep timer, stopped at close). */
  instance(options: Omit<PostgresHistoryOptions, 'sweepEveryMs'> & { sweepEveryMs?: number }, pool?: pg.Pool): Promise<PostgresHistory>;
  /** A pool of its own, ended at close. */
  pool(): pg.Pool;
  close(): Promise<void>;
}

/** A new database, migrated, and stores on it as instances of one deployment run them. */
export async function postgresHistoryDeployment(): Promise<PostgresHistoryDeployment> {
  const database = await testDatabase();
  const logger = createLogger('silent');
  await migrate(database.url, logger);
  const pools: pg.Pool[] = [];
  const stores: PostgresHistory[] = [];
  const newPool = () => {
    const pool = createPostgresPool(database.url, logger);
    pools.push(pool);
    return pool;
  };
  const admin = newPool();
  return {
    database,
    admin,
    pool: newPool,
    async instance(options, pool = newPool()) {
      // A sweep only when a test asks for one (`sweep()`), unless it sets a period.
      const store = createPostgresHistory(pool, { sweepEveryMs: 3_600_000, ...options });
      stores.push(store);
      await store.start();
      return store;
    },
    async close() {
      for (const store of stores.splice(0)) store.close();
      await Promise.all(pools.map((pool) => pool.end()));
      await database.drop();
    },
  };
}
