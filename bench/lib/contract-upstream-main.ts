import { startContractUpstream } from './contract-upstream.js';

// Child-process entry: the harness passes PORT and probes GET /__ready.
await startContractUpstream(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
