import { parseArgs } from 'node:util';

/** Named through a variable, so TypeScript types the modules from src/ (below) instead of looking into dist/. */
const dist = '../../dist';
const { loadConfig } = (await import(`${dist}/config/config.js`)) as typeof import('../../src/config/config.js');
const { createGateway } = (await import(`${dist}/app/gateway.js`)) as typeof import('../../src/app/gateway.js');

/** Absent: createGateway's own default. */
const onOff = (value: string | undefined, flag: string): boolean | undefined => {
  if (value === undefined) return undefined;
  if (value !== 'on' && value !== 'off') throw new Error(`gateway-main: --${flag} must be on or off, got ${JSON.stringify(value)}`);
  return value === 'on';
};

const { values } = parseArgs({
  options: {
    coalesce: { type: 'string' },
    sharing: { type: 'string' },
    'compiled-execution': { type: 'string' },
    'response-cache': { type: 'string' },
  },
});
const gateway = createGateway(loadConfig(process.env), {
  fastPaths: {
    coalesce: onOff(values.coalesce, 'coalesce'),
    subscriptionSharing: onOff(values.sharing, 'sharing'),
    compiledExecution: onOff(values['compiled-execution'], 'compiled-execution'),
    responseCache: onOff(values['response-cache'], 'response-cache'),
  },
});
await gateway.listen();
process.on('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
