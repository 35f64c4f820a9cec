import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config/index.js';
import { createGateway } from '../../src/app/gateway.js';

/*
 * The gateway as the bench runs it: configured from the environment like
 * src/main.ts, plus the fast paths only a benchmark switches off, which are
 * createGateway options rather than configuration (--coalesce=off, --sharing=off,
 * --graphql-fast-path=off).
 */

/** Absent: createGateway's own default. */
const onOff = (value: string | undefined, flag: string): boolean | undefined => {
  if (value === undefined) return undefined;
  if (value !== 'on' && value !== 'off') throw new Error(`gateway-main: --${flag} must be on or off, got ${JSON.stringify(value)}`);
  return value === 'on';
};

const { values } = parseArgs({
  options: { coalesce: { type: 'string' }, sharing: { type: 'string' }, 'graphql-fast-path': { type: 'string' }, 'compiled-execution': { type: 'string' }, 'response-cache': { type: 'string' } },
});
const gateway = createGateway(loadConfig(process.env), {
  fastPaths: {
    coalesce: onOff(values.coalesce, 'coalesce'),
    subscriptionSharing: onOff(values.sharing, 'sharing'),
    graphqlFastPath: onOff(values['graphql-fast-path'], 'graphql-fast-path'),
    compiledExecution: onOff(values['compiled-execution'], 'compiled-execution'),
    responseCache: onOff(values['response-cache'], 'response-cache'),
  },
});
await gateway.listen();
process.on('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
