import { createServer } from 'node:http';
import { Pool } from 'undici';

/*
 * The physical baseline of S1, as a child process like the gateway: a bare
 * Node proxy that forwards each GET to the upstream over an undici Pool (as
 * the gateway's REST backend does) and copies the answer back. No keys, no
 * parsing, no GraphQL, no coalescing: what one more HTTP hop in Node costs on
 * this machine at the least, so the gateway's own share can be told apart.
 */

const upstream = new Pool(process.env.UPSTREAM_URL ?? '', { connections: 128, pipelining: 1 });
const key = process.env.UPSTREAM_API_KEY ?? '';

createServer((req, res) => {
  if (req.url === '/readyz') return void res.writeHead(200).end();
  upstream.request({ method: 'GET', path: req.url ?? '/', headers: { authorization: key } }).then(
    async (answer) => {
      const body = Buffer.from(await answer.body.arrayBuffer());
      res.writeHead(answer.statusCode, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }).end(body);
    },
    () => void res.writeHead(502).end(),
  );
}).listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
