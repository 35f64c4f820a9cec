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
const { url } = await gateway.listen();
gateway.logger.info({ url, backend: config.backend }, `listening on ${url}: dashboard at ${url}/, GraphiQL at ${url}/graphql`);
if (config.devApiKey) {
  gateway.logger.warn({ devApiKey: config.devApiKey }, `development API key: ${config.devApiKey} (set API_KEYS to choose your own)`);
}

let stopping = false;
async function stop(signal: string): Promise<void> {
  // A second signal means "now": skip what is left of the graceful shutdown.
  if (stopping) process.exit(1);
  stopping = true;
  gateway.logger.info({ signal, deadlineMs: config.shutdownTimeoutMs }, 'shutting down');
  await gateway.close();
  gateway.logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
