import { startPacerServer } from './webhook-pacer.js';

// Child-process entry: the harness passes PORT and probes GET /readyz.
startPacerServer(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
