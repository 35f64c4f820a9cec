import { createServer } from 'node:http';
import { Pool } from 'undici';

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
