import type { Server } from 'node:http';
import type { ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer } from 'ws';

/*
 * GraphQL over WebSocket (graphql-transport-ws) on the same port and path as
 * HTTP. Operations run through yoga's envelop, so plugins, context and error
 * masking are the same as over HTTP (the graphql-yoga graphql-ws example).
 * The only file that imports `ws`.
 */

export interface GraphQLWsOptions {
  server: Server;
  path: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  yoga: YogaServerInstance<any, any>;
  /** The key a client sent in its `connection_init` payload, when any. */
  authorize(authorization: string | undefined): boolean;
  /** Makes the initial context of one operation from the connection's key. */
  initialContext(authorization: string | undefined): Record<string, unknown>;
}

export interface GraphQLWsServer {
  /** Closes every socket (1001 Going Away) and stops accepting. */
  close(): Promise<void>;
  connections(): number;
}

function authorizationOf(params: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = params?.Authorization ?? params?.authorization;
  return typeof value === 'string' ? value : undefined;
}

type Rooted = ExecutionArgs & { rootValue: { execute: (args: ExecutionArgs) => unknown; subscribe: (args: ExecutionArgs) => unknown } };

export function attachGraphQLWs(options: GraphQLWsOptions): GraphQLWsServer {
  const wss = new WebSocketServer({ server: options.server, path: options.path });
  const disposable = useServer(
    {
      execute: (args) => (args as Rooted).rootValue.execute(args) as never,
      subscribe: (args) => (args as Rooted).rootValue.subscribe(args) as never,
      // Returning false closes the socket with 4403 Forbidden, as the protocol defines.
      onConnect: (ctx) => options.authorize(authorizationOf(ctx.connectionParams)),
      onSubscribe: async (ctx, _id, payload) => {
        const { schema, execute, subscribe, contextFactory, parse, validate } = options.yoga.getEnveloped(
          options.initialContext(authorizationOf(ctx.connectionParams)),
        );
        let document;
        try {
          document = parse(payload.query);
        } catch (error) {
          return [error as never];
        }
        const errors = validate(schema, document);
        if (errors.length > 0) return errors;
        return {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe },
        };
      },
    },
    wss,
  );
  return {
    async close() {
      await disposable.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
    connections: () => wss.clients.size,
  };
}
