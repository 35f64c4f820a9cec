import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { planogram, transactions, vendings } from './fixtures.js';

export const UPSTREAM_KEY = 'bench-upstream-key';

type Route =
  'GET /transactions/{id}' | 'PUT /transactions/{id}/payment' | 'GET /vendings' | 'GET /vendings/{id}' | 'unauthorized' | 'not found';

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const notFound = (what: string) => json({ errors: { message: `${what} not found` } });
const UNAUTHORIZED = json({ errors: { message: 'invalid API key' } });
const EMPTY = json({});

/** Exact `req.url` → [route, body]. The gateway sends `?products=flat|planogram`; both forms and none are served. */
function buildAnswers(): Map<string, [Route, Buffer]> {
  const answers = new Map<string, [Route, Buffer]>();
  for (const t of transactions) answers.set(`/transactions/${t.transactionId}`, ['GET /transactions/{id}', json({ data: t })]);
  for (const query of ['', '?products=flat', '?products=planogram']) {
    const view = (v: (typeof vendings)[number]) => (query.endsWith('planogram') ? { ...v, products: planogram(v.products) } : v);
    answers.set(`/vendings${query}`, ['GET /vendings', json({ data: vendings.map(view) })]);
    for (const v of vendings) answers.set(`/vendings/${v.vendingId}${query}`, ['GET /vendings/{id}', json({ data: view(v) })]);
  }
  return answers;
}

/** `delayMs`: time every contract answer waits before it is sent; 0 sends at once, without a timer. */
function startContractUpstream(port: number, host: string, delayMs: number): void {
  const answers = buildAnswers();
  const counts: Record<string, number> = {};
  const count = (route: Route) => (counts[route] = (counts[route] ?? 0) + 1);
  const sendNow = (res: ServerResponse, status: number, body: Buffer) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  };
  const send =
    delayMs > 0 ? (res: ServerResponse, status: number, body: Buffer) => void setTimeout(sendNow, delayMs, res, status, body) : sendNow;

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    if (url.startsWith('/__')) return control(req, res, url);
    if (req.headers.authorization !== UPSTREAM_KEY) {
      count('unauthorized');
      req.resume();
      return send(res, 401, UNAUTHORIZED);
    }
    if (req.method === 'GET') {
      const answer = answers.get(url);
      if (answer) {
        count(answer[0]);
        return send(res, 200, answer[1]);
      }
    } else if (req.method === 'PUT' && url.startsWith('/transactions/') && url.endsWith('/payment')) {
      // The body is read (a real service would), not stored: answers stay the pre-serialised ones.
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        count('PUT /transactions/{id}/payment');
        const id = decodeURIComponent(url.slice('/transactions/'.length, -'/payment'.length));
        if (!answers.has(`/transactions/${id}`)) return send(res, 404, notFound(`transaction ${id}`));
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body))
          return send(res, 400, json({ errors: { message: 'body must be a JSON object' } }));
        send(res, 200, EMPTY);
      });
      return;
    }
    count('not found');
    req.resume();
    send(res, 404, notFound(url));
  }

  function control(req: IncomingMessage, res: ServerResponse, url: string): void {
    req.resume();
    if (url === '/__stats') return sendNow(res, 200, json(counts));
    if (url === '/__ready') return sendNow(res, 200, EMPTY);
    sendNow(res, 404, notFound(url));
  }

  createServer({ keepAliveTimeout: 65_000 }, handle).listen(port, host);
}

// Run as a child's entry: the harness passes PORT and probes GET /__ready; --delay-ms=5 delays every contract answer (S8).
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'delay-ms': { type: 'string', default: '0' } } });
  startContractUpstream(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', Number(values['delay-ms']));
}
