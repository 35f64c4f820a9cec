import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../logging/logger.js';
import { openDatabase, type Database } from '../../postgres/postgres-database.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The PostgreSQL database with DATABASE_URL (the shared history); undefined without it. */
    postgres: Database | undefined;
  }
}

/** How long the start waits for the migrations before it goes on without them (they keep trying). */
const MIGRATION_WAIT_MS = 5_000;

export const postgresPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const logger = app.log as Logger;
    const database = config.databaseUrl ? openDatabase(config.databaseUrl, logger, config.postgresHistory.retryMs) : undefined;
    app.decorate('postgres', database);
    if (!database) return;
    // Closed after every feature that uses it (onClose runs in the reverse of the list).
    app.addHook('onClose', () => database.close());
    const waited = await Promise.race([
      database.migrated.then(() => true),
      new Promise<false>((resolve) => setTimeout(resolve, MIGRATION_WAIT_MS, false).unref()),
    ]);
    if (!waited) logger.warn('PostgreSQL is not reachable yet: the history is not ready until it is');
  },
  { name: 'postgres' },
);
