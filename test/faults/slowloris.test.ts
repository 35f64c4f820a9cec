import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/*
 * A client that sends its request headers one byte a
 * second (a slowloris) holds a connection only as long as the headers deadline
 * (10 s, checked every second), a WebSocket upgrade request alike.
 * Before the fix, with the defaults, both held their connection for 60 s
 * (Node's 60 s headers timeout, checked every 30 s); now about 11 s.
 */

const started: RunningGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((running) => running.close()));
});

/** Writes `head` one byte a second, never ending it; resolves with the seconds until the gateway closed the connection. */
function drip(url: string, head: string, giveUpMs: number): Promise<number> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    const start = Date.now();
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < head.length) socket.write(head[sent++]!);
      else socket.write('x');
    }, 1_000);
    const done = () => {
      clearInterval(timer);
      socket.destroy();
      resolve((Date.now() - start) / 1_000);
    };
    socket.on('close', done).on('error', () => {});
    socket.on('data', () => {}); // a 408, if the server words it
    setTimeout(done, giveUpMs);
  });
}

describe('slow request headers', () => {
  it('are cut after the headers deadline (10 s), for a request and for a WebSocket upgrade', async () => {
    const running = await startGateway();
    started.push(running);
    const endless = 'X-Padding: ' + 'a'.repeat(100);
    const [plain, upgrade] = await Promise.all([
      drip(running.url, `GET /healthz HTTP/1.1\r\nHost: localhost\r\n${endless}`, 25_000),
      drip(
        running.url,
        `GET /graphql HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n${endless}`,
        25_000,
      ),
    ]);
    // 10 s and the next check (every second); a generous margin for a busy machine.
    expect(plain).toBeLessThan(15);
    expect(upgrade).toBeLessThan(15);
    expect(plain).toBeGreaterThanOrEqual(9);
  }, 30_000);

  it('follow the configured headers deadline', async () => {
    const running = await startGateway({}, {}, (config) => ({ ...config, headersTimeoutMs: 2_000 }));
    started.push(running);
    const held = await drip(running.url, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaa', 15_000);
    expect(held).toBeLessThan(6);
  });
});
