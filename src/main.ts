import { ConfigError, loadConfig, type Config } from './config/config.js';
import { createGateway } from './app/gateway.js';
import { answerArguments } from './app/command-line.js';
import { readDotEnv } from './config/env-file.js';

/** A configuration the gateway cannot use stops the process with one line naming the variable. */
function exitOnConfigError(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`vending-gateway: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}

/** Likewise a port another process holds (or METRICS_PORT equal to PORT). */
function exitOnStartError(error: unknown): never {
  const { code, address, port } = error as { code?: string; address?: string; port?: number };
  if (code === 'EADDRINUSE') {
    const which = config.metrics.port === config.port || port === config.metrics.port ? 'METRICS_PORT' : 'PORT';
    const why =
      config.metrics.port === config.port
        ? `is PORT's own (${config.port}): give the metrics a port of their own`
        : `${address ?? config.host}:${port ?? ''} is already in use by another process`;
    process.stderr.write(`vending-gateway: ${which}: ${why}\n`);
    process.exit(1);
  }
  return exitOnConfigError(error);
}

answerArguments(process.argv.slice(2));
const fromDotEnv = readDotEnv(process.env);

let config: Config;
try {
  config = loadConfig(process.env);
} catch (error) {
  exitOnConfigError(error);
}
// A first look at the demo shows an hour of sales (demoHour: memory backend with its simulator only).
const gateway = createGateway(config, { demoHour: true });
// Reading API_KEYS_FILE happens as the gateway starts: a file it cannot use is a configuration error too.
const { url, metricsUrl } = await gateway.listen().catch(exitOnStartError);
const places = [
  `dashboard at ${url}/`,
  ...(config.graphiql && config.limits.trustedDocuments !== 'only' ? [`GraphiQL at ${url}/graphql`] : []),
  ...(metricsUrl ? [`metrics at ${metricsUrl}`] : []),
];
gateway.logger.info(
  { url, backend: config.backend, redis: config.redis?.kind ?? 'none (events in this process)', metricsUrl },
  `listening on ${url}: ${places.join(', ')}`,
);
if (fromDotEnv !== undefined) gateway.logger.info(`read ${fromDotEnv} variables from .env (the environment wins over it)`);
if (config.unknownNodeEnv !== undefined) {
  gateway.logger.warn(
    { nodeEnv: config.unknownNodeEnv },
    `NODE_ENV=${config.unknownNodeEnv} is not "production": running with the development defaults (the development key, ` +
      `introspection, GraphiQL, field suggestions)`,
  );
}
for (const { name, instead } of config.retiredVariables) {
  gateway.logger.warn({ variable: name }, `${name} is no longer read and is ignored: ${instead}`);
}
if (config.devApiKey) {
  gateway.logger.warn({ devApiKey: config.devApiKey }, `development API key: ${config.devApiKey} (set API_KEYS to choose your own)`);
}

/*
 * Ctrl-C in a terminal signals the whole foreground group: the gateway, and
 * npm (`npm start`), which forwards it again. A repeat within this long is
 * that echo, not a second press.
 */
const ECHO_MS = 500;
let stoppingSince: number | undefined;
async function stop(signal: string): Promise<void> {
  // A second signal means "now": skip what is left of the graceful shutdown.
  if (stoppingSince !== undefined) {
    if (Date.now() - stoppingSince < ECHO_MS) return;
    process.exit(1);
  }
  stoppingSince = Date.now();
  gateway.logger.info({ signal, deadlineMs: config.shutdownTimeoutMs }, 'shutting down');
  await gateway.close();
  gateway.logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
// Operators rotate keys without a restart: API_KEYS_FILE is read again and the JWKS fetched again.
process.on('SIGHUP', () => {
  gateway.logger.info({ signal: 'SIGHUP' }, 're-reading API keys and the JWKS');
  gateway.reloadIdentities();
});
process.on('SIGINT', () => void stop('SIGINT'));
