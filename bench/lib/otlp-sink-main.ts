import { createServer } from 'node:http';

/*
 * A collector stand-in for benchmarks with tracing on (BENCH_OTLP_ENDPOINT):
 * it takes OTLP/HTTP exports on the port given and drops them, so the
 * gateway pays for making, serialising and sending its spans, and the sink
 * as little as possible for receiving them. On SIGTERM or SIGINT it prints
 * how many exports and bytes it took.
 *   node --import tsx bench/lib/otlp-sink-main.ts 4399
 */

let exports = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    exports += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(Number(process.argv[2] ?? 4318), '127.0.0.1');
const stop = () => {
  process.stdout.write(`${JSON.stringify({ exports, bytes })}\n`, () => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
