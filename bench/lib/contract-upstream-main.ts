import { parseArgs } from 'node:util';
import { startContractUpstream } from './contract-upstream.js';

// Child-process entry: the harness passes PORT and probes GET /__ready; --delay-ms=5 delays every contract answer (S8).
const { values } = parseArgs({ options: { 'delay-ms': { type: 'string', default: '0' } } });
const delayMs = Number(values['delay-ms']);
if (!Number.isFinite(delayMs) || delayMs < 0)
  throw new Error(`contract-upstream-main: --delay-ms must be a number ≥ 0, got ${JSON.stringify(values['delay-ms'])}`);
await startContractUpstream(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', { delayMs });
