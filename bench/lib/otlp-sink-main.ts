import { createServer } from 'node:http';

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
