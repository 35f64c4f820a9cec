import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

/*
 * The physical baseline of S4, as a child process like the gateway: a bare ws
 * server that, on POST /broadcast, sends the posted bytes (one message built
 * once) to every connected client. No GraphQL, no protocol, no per-client
 * work beyond the send: what fan-out costs on this machine at the least.
 */

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/broadcast') {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const message = Buffer.concat(chunks);
      // Answer first, then fan out: the gateway also answers a webhook before any subscriber work.
      res.writeHead(200, { 'content-length': 0 }).end();
      for (const client of wss.clients) client.send(message, { binary: false });
    });
    return;
  }
  req.resume();
  const body = req.url === '/readyz' ? JSON.stringify({ clients: wss.clients.size }) : '';
  res.writeHead(req.url === '/readyz' ? 200 : 404, { 'content-type': 'application/json' }).end(body);
});
server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)));
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
