import { ConfigError, loadConfig, type Config } from './config/index.js';
import { createGateway } from './app/gateway.js';

function configOrExit(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`vending-gateway: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

const config = configOrExit();
const gateway = createGateway(config);
const { url, metricsUrl } = await gateway.listen();
const places = [`dashboard at ${url}/`, ...(config.graphiql ? [`GraphiQL at ${url}/graphql`] : []), ...(metricsUrl ? [`metrics at ${metricsUrl}`] : [])];
gateway.logger.info({ url, backend: config.backend, metricsUrl }, `listening on ${url}: ${places.join(', ')}`);
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
process.on('SIGINT', () => void stop('SIGINT'));
