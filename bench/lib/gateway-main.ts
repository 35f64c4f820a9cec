import type { GatewayDeps } from '../../src/app/gateway-deps.js';

/** Named through a variable, so TypeScript types the modules from src/ (below) instead of looking into dist/. */
const dist = '../../dist';
const { loadConfig } = (await import(`${dist}/config/config.js`)) as typeof import('../../src/config/config.js');
const { createGateway } = (await import(`${dist}/app/gateway.js`)) as typeof import('../../src/app/gateway.js');

/** createGateway's fast paths as startGateway (servers.ts) passes them, JSON; one absent keeps createGateway's default. */
const fastPaths = JSON.parse(process.argv[2] ?? '{}') as GatewayDeps['fastPaths'];
const gateway = createGateway(loadConfig(process.env), { fastPaths });
await gateway.listen();
process.on('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
