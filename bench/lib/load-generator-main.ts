import { startLoadGeneratorServer } from './load-generator-server.js';

// Child-process entry: the harness passes PORT and probes GET /readyz.
startLoadGeneratorServer(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
