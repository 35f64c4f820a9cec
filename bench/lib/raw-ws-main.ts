import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

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
