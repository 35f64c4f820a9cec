import { connect, createServer, type Socket } from 'node:net';

/*
 * A load balancer in front of gateways, for restart tests: it forwards each
 * new connection to the current target, and while there is none it holds new
 * connections (they wait, neither refused nor reset) until one is set. A
 * connection stays with the target it was forwarded to, so switching the
 * target moves only new connections, as draining an instance does.
 */

export interface TcpProxy {
  /** `http://127.0.0.1:<port>` of the proxy. */
  url: string;
  /** Forwards new connections to `targetUrl` (`http://host:port`); `undefined` holds them. */
  target(targetUrl: string | undefined): void;
  /** Breaks every connection it forwarded and holds new ones, as a network partition does, until `target` is called. */
  cut(): void;
  close(): Promise<void>;
}

interface Address {
  host: string;
  port: number;
}

function addressOf(url: string): Address {
  const { hostname, port } = new URL(url);
  return { host: hostname.replace(/^\[|\]$/g, ''), port: Number(port) };
}

export async function startTcpProxy(initialTarget?: string): Promise<TcpProxy> {
  let target = initialTarget === undefined ? undefined : addressOf(initialTarget);
  const held = new Set<Socket>();
  const open = new Set<Socket>();

  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };

  const forward = (client: Socket, to: Address) => {
    const upstream = connect(to.port, to.host);
    track(upstream);
    // Either side ending or failing ends the other, as a TCP balancer does.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  };

  const server = createServer({ pauseOnConnect: true }, (client) => {
    track(client);
    if (target) return forward(client, target);
    held.add(client);
    client.on('error', () => {});
    client.once('close', () => held.delete(client));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: `http://127.0.0.1:${port}`,
    target(targetUrl) {
      target = targetUrl === undefined ? undefined : addressOf(targetUrl);
      if (!target) return;
      for (const client of held) forward(client, target);
      held.clear();
    },
    cut() {
      target = undefined;
      for (const socket of open) socket.destroy();
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of open) socket.destroy();
      await closed;
    },
  };
}
