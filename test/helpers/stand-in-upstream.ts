/**
 * An independent stand-in of the upstream Vending and Transaction REST service.
 * It deliberately imports nothing from src/: if it shared the gateway's own
 * contract code, a misreading of the contract would be repeated here and the
 * tests would agree with the bug instead of catching it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface StandInOptions {
  /**
   * keys accepted at start (see `StandInUpstream.keys`); a request's Authorization must equal a key or `Bearer <key>`. default
   * ['upstream-key']
   */
  keys?: string[];
  /** port to listen on; default 0 (a free one). A test restarts an upstream on the port it had. */
  port?: number;
  /** values of the products query parameter; default { flat: 'flat', planogram: 'planogram' } */
  productsValues?: { flat: string; planogram: string };
  /**
   * Accounts, as the service makes keys per account: key → account. A key named here reads only the
   * transactions of its account (`transactionAccounts`), any other is 404 to it, as an id it may not see;
   * a key not named here reads everything.
   */
  accounts?: Record<string, string>;
  /**
   * Whether `Bearer <key>` is accepted besides the bare key (the contract leaves the prefix unconfirmed, part 5);
   * false: a service that knows bare keys only, and refuses the prefixed form as an unknown key. default true
   */
  acceptsBearer?: boolean;
}

export type Fault =
  | { kind: 'status'; status: number; body?: string; contentType?: string }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'html' }
  | { kind: 'not-json' }
  | { kind: 'wrong-shape' }
  | { kind: 'delay'; ms: number } // answers normally, late: lets a test overlap concurrent reads
  | { kind: 'until'; released: Promise<void> } // answers normally once the test releases it, however busy the machine
  | { kind: 'drip'; everyMs: number }; // sends 200 and its headers, then one byte of body every `everyMs`, never ending

/** `query` is the raw query string without the leading `?` ('' when absent). */
export interface RecordedCall {
  method: string;
  path: string;
  query: string;
  authorization: string | undefined;
  body: string;
}

export interface StandInUpstream {
  url: string;
  /** The keys accepted now: a test adds one to grant it, deletes one to revoke it. */
  keys: Set<string>;
  calls: RecordedCall[];
  /** Every request's headers as received (apart from `calls`, which tests compare whole and clear). */
  requestHeaders: Array<{ method: string; path: string; headers: IncomingMessage['headers'] }>;
  /** Requests received whose connection is still open and not yet answered (a client that gave up closes it). */
  readonly openRequests: number;
  callsTo(method: string, pathPrefix: string): RecordedCall[];
  injectFault(fault: Fault, match?: { method?: string; pathPrefix?: string; times?: number }): void;
  clearFaults(): void;
  transactions: Record<string, unknown>[];
  /** transactionId → account, for the keys of `StandInOptions.accounts`; a test adds its accounts' transactions here. */
  transactionAccounts: Map<string, string>;
  vendings: Record<string, unknown>[];
  close(): Promise<void>;
}

const CATALOG = {
  cola: {
    productId: '3f1c2a9e-0b7d-4c1a-9e51-2d6f8a4b7c01',
    productName: 'Cola 0.5 l',
    productPrice: 2.5,
    productThumbnail: 'https://cdn.example.com/p/cola.png',
    productSku: 'BEV-COLA-050',
    vatRate: 0.19,
  },
  water: {
    productId: '3f1c2a9e-0b7d-4c1a-9e51-2d6f8a4b7c02',
    productName: 'Still water 0.5 l',
    productPrice: 1.2,
    productThumbnail: 'https://cdn.example.com/p/water.png',
    productSku: 'BEV-WATR-050',
    vatRate: 0.19,
  },
  chips: {
    productId: '3f1c2a9e-0b7d-4c1a-9e51-2d6f8a4b7c03',
    productName: 'Paprika chips 75 g',
    productPrice: 1.99,
    productThumbnail: 'https://cdn.example.com/p/chips.png',
    productSku: 'SNK-CHIP-075',
    vatRate: 0.07,
  },
  bar: {
    productId: '3f1c2a9e-0b7d-4c1a-9e51-2d6f8a4b7c04',
    productName: 'Chocolate bar',
    productPrice: 1.35,
    productThumbnail: 'https://cdn.example.com/p/bar.png',
    productSku: 'SNK-CHOC-050',
    vatRate: 0.2,
  },
  coffee: {
    productId: '3f1c2a9e-0b7d-4c1a-9e51-2d6f8a4b7c05',
    productName: 'Cold brew coffee',
    productPrice: 3.49,
    productThumbnail: 'https://cdn.example.com/p/coffee.png',
    productSku: 'BEV-COFF-025',
    vatRate: 0.2,
  },
} as const;

const line = (name: keyof typeof CATALOG, quantity: number): Record<string, unknown> => ({ ...CATALOG[name], quantity });

// Built per instance so that a PUT stored by one test never leaks into another.
function seedTransactions(): Record<string, unknown>[] {
  const tx = (transactionId: string, customerId: string, status: string, products: Record<string, unknown>[], n: number) => ({
    transactionId,
    customerId,
    products,
    status,
    terminalId: `T-${9 + n}`,
    createdAt: `2026-01-0${1 + n}T10:00:00Z`,
    meta: { source: n % 2 ? 'app' : 'kiosk', tags: ['a', 'b'] },
  });
  return [
    tx('8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e01', 'c0ffee00-1111-4a2b-8c3d-000000000001', 'active', [line('cola', 1), line('chips', 2)], 0),
    tx('8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e02', 'c0ffee00-1111-4a2b-8c3d-000000000002', 'pending', [line('water', 3)], 1),
    tx('8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e03', 'c0ffee00-1111-4a2b-8c3d-000000000001', 'completed', [line('bar', 1), line('coffee', 1)], 2),
    tx('8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e04', 'c0ffee00-1111-4a2b-8c3d-000000000003', 'completed', [], 3),
    tx('8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e05', 'c0ffee00-1111-4a2b-8c3d-000000000004', 'active', [line('coffee', 2)], 4),
  ];
}

function seedVendings(): Record<string, unknown>[] {
  const v = (
    vendingId: string,
    status: string,
    online: boolean,
    enabled: boolean,
    where: [string, string, string, string],
    identifier: string,
    posId: string,
    products: Record<string, unknown>[],
  ) => ({
    vendingId,
    status,
    online,
    enabled,
    address: where[0],
    building: where[1],
    countryCode: where[2],
    currencyCode: where[3],
    identifier,
    posId,
    products,
    firmware: { version: '4.2.1' },
    lastSeenAt: '2026-01-05T08:30:00Z',
  });
  const berlin: [string, string, string, string] = ['Friedrichstr. 12, 10117 Berlin', 'Tower A, lobby', 'DE', 'EUR'];
  const london: [string, string, string, string] = ['221 Baker St, London NW1 6XE', 'North wing, 2nd floor', 'GB', 'GBP'];
  return [
    v('a7e4b2d0-3c5f-4e8a-b1d2-7f6e5d4c3b01', 'active', true, true, berlin, 'VM-BER-001', 'e5d4c3b2-a1f0-4e9d-8c7b-6a5f4e3d2c01', [
      line('cola', 8),
      line('water', 10),
      line('chips', 4),
      line('bar', 6),
    ]),
    v('a7e4b2d0-3c5f-4e8a-b1d2-7f6e5d4c3b02', 'maintenance', false, true, berlin, 'VM-BER-002', 'e5d4c3b2-a1f0-4e9d-8c7b-6a5f4e3d2c02', [
      line('water', 2),
    ]),
    v('a7e4b2d0-3c5f-4e8a-b1d2-7f6e5d4c3b03', 'active', true, false, london, 'VM-LON-001', 'e5d4c3b2-a1f0-4e9d-8c7b-6a5f4e3d2c03', [
      line('coffee', 5),
      line('bar', 7),
    ]),
    v('a7e4b2d0-3c5f-4e8a-b1d2-7f6e5d4c3b04', 'inactive', false, false, london, 'VM-LON-002', 'e5d4c3b2-a1f0-4e9d-8c7b-6a5f4e3d2c04', []),
  ];
}

// A grid of rows and columns, unlike the gateway's demo (trays of slots), so a
// gateway that assumes its own demo shape is caught.
function planogram(products: unknown): unknown {
  const lines = Array.isArray(products) ? (products as Array<Record<string, unknown>>) : [];
  const rows: Array<{ row: number; columns: unknown[] }> = [];
  lines.forEach((p, i) => {
    const row = Math.floor(i / 3) + 1;
    if (rows.length < row) rows.push({ row, columns: [] });
    rows[row - 1]?.columns.push({ column: (i % 3) + 1, productId: p.productId, capacity: 10, stock: p.quantity });
  });
  return { layout: 'grid', rows };
}

interface QueuedFault {
  fault: Fault;
  method: string | undefined;
  pathPrefix: string | undefined;
  remaining: number;
}

export async function startStandInUpstream(options: StandInOptions = {}): Promise<StandInUpstream> {
  const keys = new Set(options.keys ?? ['upstream-key']);
  const values = options.productsValues ?? { flat: 'flat', planogram: 'planogram' };
  const calls: RecordedCall[] = [];
  const requestHeaders: StandInUpstream['requestHeaders'] = [];
  const transactions = seedTransactions();
  const vendings = seedVendings();
  let faults: QueuedFault[] = [];
  const sockets = new Set<Socket>();
  let openRequests = 0;

  const send = (res: ServerResponse, status: number, body: string, contentType = 'application/json') => {
    res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const json = (res: ServerResponse, status: number, value: unknown) => send(res, status, JSON.stringify(value));
  const error = (res: ServerResponse, status: number, message: string) => json(res, status, { errors: { message } });

  function takeFault(method: string, path: string): Fault | undefined {
    const i = faults.findIndex((f) => (!f.method || f.method === method) && (!f.pathPrefix || path.startsWith(f.pathPrefix)));
    const entry = faults[i];
    if (!entry) return undefined;
    if (--entry.remaining <= 0) faults.splice(i, 1);
    return entry.fault;
  }

  function applyFault(fault: Fault, req: IncomingMessage, res: ServerResponse): void {
    switch (fault.kind) {
      case 'status':
        return send(res, fault.status, fault.body ?? '{"errors":{"message":"injected"}}', fault.contentType);
      case 'hang':
        return; // close() destroys the socket, so the request cannot outlive the stand-in
      case 'reset':
        req.socket.destroy();
        return;
      case 'html':
        return send(res, 500, '<!doctype html><html><body><h1>500 Internal Server Error</h1></body></html>', 'text/html');
      case 'not-json':
        return send(res, 200, 'this is not json');
      case 'wrong-shape':
        return json(res, 200, { items: [] });
      case 'delay':
        return;
      case 'drip': {
        res.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => res.write(' '), fault.everyMs);
        res.on('close', () => clearInterval(timer));
        return;
      }
    }
  }

  const transactionAccounts = new Map<string, string>();
  /** Whether `authorization`'s key may see transaction `id` (a key of an account only its account's). */
  const mayRead = (authorization: string | undefined, id: string): boolean => {
    const key = authorization?.replace(/^Bearer /, '') ?? '';
    const account = options.accounts?.[key];
    return account === undefined || transactionAccounts.get(id) === account;
  };

  function route(method: string, url: URL, body: string, res: ServerResponse, authorization: string | undefined): void {
    let segments: string[];
    try {
      segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      return error(res, 404, `no route for ${url.pathname}`);
    }
    const [collection, id, sub] = segments;
    const only = (allowed: string) => {
      if (method === allowed) return true;
      res.setHeader('allow', allowed);
      error(res, 405, `method ${method} not allowed on ${url.pathname}`);
      return false;
    };

    if (collection === 'transactions' && id !== undefined && segments.length === 2) {
      if (!only('GET')) return;
      const tx = transactions.find((t) => t.transactionId === id);
      return tx && mayRead(authorization, id) ? json(res, 200, { data: tx }) : error(res, 404, `transaction ${id} not found`);
    }
    if (collection === 'transactions' && id !== undefined && sub === 'payment' && segments.length === 3) {
      if (!only('PUT')) return;
      const tx = transactions.find((t) => t.transactionId === id);
      if (!tx || !mayRead(authorization, id)) return error(res, 404, `transaction ${id} not found`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        return error(res, 400, 'request body is not valid JSON');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        return error(res, 400, 'request body must be a JSON object');
      tx.payment = parsed;
      return json(res, 200, {});
    }
    if (collection === 'vendings' && segments.length <= 2) {
      if (!only('GET')) return;
      const products = url.searchParams.get('products');
      if (products !== null && products !== values.flat && products !== values.planogram) {
        return error(res, 400, `products must be ${JSON.stringify(values.flat)} or ${JSON.stringify(values.planogram)}`);
      }
      const view = (v: Record<string, unknown>) =>
        products === values.planogram && products !== values.flat ? { ...v, products: planogram(v.products) } : v;
      if (id === undefined) return json(res, 200, { data: vendings.map(view) });
      const vending = vendings.find((v) => v.vendingId === id);
      return vending ? json(res, 200, { data: view(vending) }) : error(res, 404, `vending ${id} not found`);
    }
    return error(res, 404, `no route for ${url.pathname}`);
  }

  const server = createServer((req, res) => {
    openRequests++;
    res.on('close', () => openRequests--);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const method = req.method ?? 'GET';
      const url = new URL(req.url ?? '/', 'http://stand-in.invalid');
      const authorization = req.headers.authorization;
      const body = Buffer.concat(chunks).toString('utf8');
      // Recorded before answering, so faulted and hanging requests are visible too.
      calls.push({ method, path: url.pathname, query: url.search.replace(/^\?/, ''), authorization, body });
      requestHeaders.push({ method, path: url.pathname, headers: req.headers });

      const answer = () => {
        // Checked before any routing, so a bad key cannot probe which ids exist.
        if (authorization === undefined || authorization === '') return error(res, 401, 'missing Authorization header');
        const bearer = options.acceptsBearer !== false && authorization.startsWith('Bearer ') && keys.has(authorization.slice(7));
        if (!keys.has(authorization) && !bearer) return error(res, 401, 'invalid API key');
        route(method, url, body, res, authorization);
      };
      const fault = takeFault(method, url.pathname);
      if (fault?.kind === 'delay') return void setTimeout(answer, fault.ms);
      if (fault?.kind === 'until') return void fault.released.then(answer);
      if (fault) return applyFault(fault, req, res);
      answer();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    keys,
    calls,
    requestHeaders,
    get openRequests() {
      return openRequests;
    },
    callsTo: (method, pathPrefix) => calls.filter((c) => c.method === method.toUpperCase() && c.path.startsWith(pathPrefix)),
    injectFault(fault, match = {}) {
      faults.push({ fault, method: match.method?.toUpperCase(), pathPrefix: match.pathPrefix, remaining: match.times ?? 1 });
    },
    clearFaults() {
      faults = [];
    },
    transactions,
    transactionAccounts,
    vendings,
    close: () =>
      new Promise<void>((resolve) => {
        // Without destroying sockets, keep-alive and hanging requests would hold close() open.
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
