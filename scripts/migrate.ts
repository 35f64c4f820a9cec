import { ConfigError, loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/logging/logger.js';
import { migrate } from '../src/postgres/postgres-database.js';

/*
 * npm run migrate    runs the PostgreSQL migrations (migrations/) on DATABASE_URL, as every
 *                    instance does when it starts: for an operator who migrates before a rollout.
 */
let databaseUrl: string | undefined;
try {
  databaseUrl = loadConfig(process.env).databaseUrl;
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`migrate: ${error.message}\n`);
  process.exit(1);
}
if (!databaseUrl) {
  process.stderr.write('migrate: DATABASE_URL is not set; it names the database to migrate (postgres://…)\n');
  process.exit(1);
}
try {
  const ran = await migrate(databaseUrl, createLogger('warn'));
  process.stdout.write(ran.length === 0 ? 'migrate: nothing to run (up to date)\n' : `migrate: ran ${ran.join(', ')}\n`);
} catch (error) {
  process.stderr.write(`migrate: ${(error as Error).message}\n`);
  process.exit(1);
}
