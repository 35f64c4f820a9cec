import { handleProtocols, makeServer, type ServerOptions } from 'graphql-ws';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../logging/logger.js';
import { WsClose } from '../refusals/ws-close-codes.js';

/*
 * graphql-ws's server on the sockets of a `ws` server: what graphql-ws's own
 * `ws` adapter (graphql-ws/use/ws) does, keep-alive pings and all, with one
 * difference. That adapter writes every socket error and every failure of a
 * message's handling to the console, stack trace and all, over several
 * lines, and answers 4500: a client sending a frame over the size limit (ws
 * closes it with 1009 and emits an error) printed a trace with no key
 * needed. Here each is one line of the gateway's JSON log, in words, and a
 * socket ws already closed is left to the close ws sent.
 */

export interface WsSocketsOptions {
  /** How often an open socket is pinged; one that does not answer within as long again is dropped. Infinity: never. */
  keepAliveMs: number;
  logger: Logger;
}

/**
 * What graphql-ws's context carries of the connection (`ctx.extra`): its socket, and the state its server keeps per
 * connection (`C`, made by `connection()` as the socket opens), so that nothing is looked up by the connection.
 */
export type Extra<C extends object = object> = C & { socket: WebSocket };

export function serveGraphQLWs<P extends Record<string, unknown>, C extends object>(
  serverOptions: ServerOptions<P, Extra<C>>,
  wss: WebSocketServer,
  { keepAliveMs, logger, connection }: WsSocketsOptions & { connection: () => C },
): { dispose(): Promise<void> } {
  const server = makeServer<P, Extra<C>>(serverOptions);
  wss.options.handleProtocols = handleProtocols;
  wss.on('connection', (socket: WebSocket) => {
    socket.once('error', (error: Error & { code?: string }) => {
      // ws closed the socket itself (1009 for a frame over maxPayload, 1002 for a broken frame): its close stands.
      logger.warn({ reason: error.message, code: error.code }, 'WebSocket connection failed');
      if (socket.readyState === socket.OPEN) socket.close(...WsClose.internalError);
    });
    let pongWait: NodeJS.Timeout | undefined;
    const pings =
      keepAliveMs > 0 && Number.isFinite(keepAliveMs)
        ? setInterval(() => {
            if (socket.readyState !== socket.OPEN) return;
            pongWait = setTimeout(() => socket.terminate(), keepAliveMs);
            socket.once('pong', () => {
              clearTimeout(pongWait);
              pongWait = undefined;
            });
            socket.ping();
          }, keepAliveMs)
        : undefined;
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) =>
          new Promise<void>((resolve, reject) => {
            if (socket.readyState !== socket.OPEN) return resolve();
            socket.send(data, (error) => (error ? reject(error) : resolve()));
          }),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data: Buffer) => {
            handle(data.toString()).catch((error: unknown) => {
              logger.error({ err: error }, 'WebSocket message failed');
              if (socket.readyState === socket.OPEN) socket.close(...WsClose.internalError);
            });
          }),
      },
      { ...connection(), socket },
    );
    socket.once('close', (code: number, reason: Buffer) => {
      clearTimeout(pongWait);
      clearInterval(pings);
      void closed(code, reason.toString());
    });
  });
  return {
    async dispose() {
      for (const client of wss.clients) client.close(...WsClose.goingAway);
      wss.removeAllListeners('connection');
    },
  };
}
