import WebSocket from 'ws';
import { CLIENT_KEY } from './servers.js';

export const SUBSCRIPTION = 'subscription { transactionUpdated { eventId status } }';
const BATCH = 200;

const wsUrl = (httpUrl: string, path: string) => `${httpUrl.replace(/^http/, 'ws')}${path}`;

/** `handshake(i)`: subscriber i's first message after open (connection_init) and the one after the first answer (subscribe). */
function socketFleet(options: {
  url: string;
  protocol?: string;
  handshake?: (i: number) => [string, string];
  sink(i: number, data: Buffer): void;
}) {
  const sockets: WebSocket[] = [];
  const failed = new Set<number>();
  let closing = false;
  const open = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(options.url, options.protocol, { perMessageDeflate: false });
      sockets[i] = ws;
      const handshake = options.handshake?.(i);
      let ready = !handshake;
      ws.on('open', () => {
        if (handshake) ws.send(handshake[0]);
        else resolve();
      });
      ws.on('message', (data: Buffer) => {
        if (!ready) {
          // The only message before the subscribe is connection_ack (anything else fails the subscriber).
          if (!data.includes('"connection_ack"')) return reject(new Error(data.toString()));
          ready = true;
          ws.send(handshake![1]);
          return resolve();
        }
        if (data.includes('"type":"ping"')) return ws.send('{"type":"pong"}');
        options.sink(i, data);
      });
      ws.on('error', reject);
      ws.on('close', () => {
        if (!closing) failed.add(i);
        reject(new Error('closed'));
      });
    });
  return {
    get size() {
      return sockets.length;
    },
    get failures() {
      return failed.size;
    },
    /** Opens subscribers up to `target`, BATCH at a time. */
    async grow(target: number) {
      for (let start = sockets.length; start < target; start += BATCH) {
        const batch = Array.from({ length: Math.min(BATCH, target - start) }, (_, k) => start + k);
        await Promise.all(batch.map((i) => open(i).catch(() => void failed.add(i))));
      }
    },
    async close() {
      closing = true;
      const all = sockets.map((ws) => (ws.readyState === WebSocket.CLOSED ? Promise.resolve() : new Promise((r) => ws.once('close', r))));
      for (const ws of sockets) ws.close(1000);
      await Promise.race([Promise.all(all), new Promise((r) => setTimeout(r, 10_000))]);
      for (const ws of sockets) ws.terminate();
    },
  };
}

/** graphql-ws subscribers; `idOf(i)`: subscriber i's subscription id (S5's are all '1', S4's and S6's a UUID each). */
export const liteFleet = (httpUrl: string, sink: (i: number, data: Buffer) => void, idOf = (_i: number) => '1') =>
  socketFleet({
    url: wsUrl(httpUrl, '/graphql'),
    protocol: 'graphql-transport-ws',
    handshake: (i) => [
      JSON.stringify({ type: 'connection_init', payload: { Authorization: CLIENT_KEY } }),
      JSON.stringify({ id: idOf(i), type: 'subscribe', payload: { query: SUBSCRIPTION } }),
    ],
    sink,
  });

export const rawFleet = (httpUrl: string, sink: (i: number, data: Buffer) => void) => socketFleet({ url: wsUrl(httpUrl, '/'), sink });

/** The eventId of a graphql-ws `next` message, read without parsing the JSON; undefined for any other message. */
export function eventIdOf(data: Buffer): string | undefined {
  if (!data.includes('"type":"next"') || data.includes('"errors"')) return undefined;
  const key = data.indexOf('"eventId":"');
  if (key < 0) return undefined;
  const start = key + '"eventId":"'.length;
  const end = data.indexOf(0x22, start);
  return end < 0 ? undefined : data.toString('latin1', start, end);
}
