import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import {
  getOperationAST,
  GraphQLError,
  valueFromASTUntyped,
  visit,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  OperationTypeNode,
} from 'graphql';

import type { Context, SubscribePayload } from 'graphql-ws';
import { isAsyncIterable, mapAsyncIterator, type GraphQLParams, type YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer, type WebSocket } from 'ws';
import { ConnectedCaller } from '../backends/caller.js';
import type { WebSocketLimits } from '../config/config.js';
import { clientError, clientResult } from '../graphql/client-result.js';
import type { GraphQLServerContext } from '../graphql/graphql-server.js';
import type { Logger } from '../logging/logger.js';
import { createShutdownHold } from './shutdown-hold.js';
import { createSharedSubscriptions } from './shared-subscriptions.js';
import { refuseOperation } from '../refusals/operation-refusals.js';
import { serveGraphQLWs, type Extra } from './ws-sockets.js';
import { WsClose } from '../refusals/ws-close-codes.js';

/*
 * GraphQL over WebSocket (graphql-transport-ws) on the same port and path as
 * HTTP. Each operation enters yoga where an HTTP request's parameters do,
 * `getResultForParams`, so its params hooks, envelop's plugins, the context
 * and error masking are the same as over HTTP. (graphql-yoga's graphql-ws
 * recipe calls `getEnveloped` directly, which skips the params stage: rules
 * there had to be checked again here by hand, and one added later would have
 * been missed.) The only file that imports `ws`.
 */

export interface GraphQLWsOptions {
  server: Server;
  path: string;
  /** Where a socket's failure is told, one JSON line each (ws-sockets.ts). */
  logger: Logger;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  yoga: YogaServerInstance<any, any>;
  limits: WebSocketLimits;
  /** Bytes a connection may hold unsent (ws `bufferedAmount`) before it is closed: its client reads too slowly. */
  maxUnsentBytes: number;
  /** Subscribers with the same document, variables and key share one execution per event. */
  sharing: boolean;
  /**
   * Asked when a client's `connection_init` payload says `demoSimulator: true`
   * (the dashboard page); the returned function is called when it leaves.
   */
  onDemoRequest?: (() => () => void) | undefined;
  /**
   * Judges the key a client sent in its `connection_init` payload, when any:
   * `retry` when it could not be judged now (forward mode, upstream failing or
   * too many key checks).
   */
  authorize(authorization: string | undefined): Promise<'accepted' | 'refused' | 'retry'>;
  /** Makes the initial context of one operation from the connection's key and resume point (`connectionParams.after`). */
  initialContext(authorization: string | undefined, after: unknown): GraphQLServerContext;
}

export interface GraphQLWsServer {
  /** From now on a subscription whose source ends sends no `complete`: the gateway is stopping, its client is to come back. */
  holdEnds(): void;
  /**
   * Once every subscription open at `holdEnds()` has sent what its source held
   * (at most `settleMs`), closes every connection with 1012 Service Restart,
   * which graphql-ws clients retry with their default settings, and stops
   * taking connections.
   */
  close(settleMs: number): Promise<void>;
  /** Subscriptions open over WebSocket, and how many subscriptions of the event bus they use. */
  subscriptions(): { subscribers: number; executions: number };
}

function authorizationOf(params: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = params?.Authorization ?? params?.authorization;
  return typeof value === 'string' ? value : undefined;
}

/**
 * Whether the operation resumes from a client's position: an `after`
 * argument given a value (literally or by variable), or a connection that
 * carries one (`connectionParams.after`, which `transactionUpdated` and
 * `vendingUpdated` take when they have no `after` of their own). Such a subscription replays what it
 * missed before going live, so it cannot join a group whose replay (or none)
 * already went out; any `after` anywhere in the document counts, which only
 * ever costs sharing.
 */
function resumes(
  document: DocumentNode,
  variables: Readonly<Record<string, unknown>> | null | undefined,
  connectionAfter: unknown,
): boolean {
  const connectionResumes = connectionAfter !== undefined && connectionAfter !== null && connectionAfter !== '';
  let found = false;
  visit(document, {
    Field(node) {
      if (connectionResumes && (node.name.value === 'transactionUpdated' || node.name.value === 'vendingUpdated')) found = true;
    },
    Argument(node) {
      if (node.name.value !== 'after') return;
      const value = valueFromASTUntyped(node.value, variables);
      if (value !== null && value !== undefined) found = true;
    },
  });
  return found;
}

/** Messages only a server sends: graphql-ws would throw on one from a client, and the socket close with 4500. */
const SERVER_ONLY = new Set(['connection_ack', 'next', 'error']);

/**
 * A client's message as it is parsed (graphql-ws's reviver). A message of a
 * type only a server sends is not one a client may send: refused here, so
 * graphql-ws closes the socket with 4400 Bad Request, as the protocol says
 * for any message of a type it does not specify. And graphql-ws refuses a
 * `subscribe` whose payload has no `query` text (closing the whole
 * connection with 4400), but a trusted document is sent by its hash alone
 * (`extensions.persistedQuery` or `documentId`), as over HTTP. Such a payload
 * is given an empty text, so it reaches the same params stage as an HTTP
 * request and is refused or run there.
 */
function clientMessage(key: string, value: unknown): unknown {
  if (key !== '' || typeof value !== 'object' || value === null) return value;
  const message = value as { type?: unknown; payload?: Record<string, unknown> | null };
  if (typeof message.type === 'string' && SERVER_ONLY.has(message.type)) throw new Error(`a client may not send "${message.type}"`);
  const payload = message.payload;
  if (message.type !== 'subscribe' || typeof payload !== 'object' || payload === null || payload.query !== undefined) return value;
  const extensions = payload.extensions as { persistedQuery?: unknown } | undefined;
  const byHash =
    (typeof extensions === 'object' && extensions !== null && extensions.persistedQuery !== undefined) || payload.documentId !== undefined;
  return byHash ? { ...message, payload: { ...payload, query: '' } } : value;
}

/** What the server keeps per connection, in graphql-ws's context (`ctx.extra`). */
interface Connection {
  /** The ids of its operations running now (bounded by maxSubscriptions). */
  operations: Set<string>;
  /** Gone when the connection closes, so the queries and mutations it started stop their upstream calls; made at its first. */
  caller?: ConnectedCaller;
  /** Gives back the demo simulator's slot it took (`connectionParams.demoSimulator`). */
  demoRelease?: () => void;
}

/** How long a stopping gateway waits for clients to answer its close frame before it drops their sockets. */
const CLOSE_HANDSHAKE_MS = 1_000;

type Rooted = ExecutionArgs & { rootValue: { execute: (args: ExecutionArgs) => unknown; subscribe: (args: ExecutionArgs) => unknown } };
type GroupStart = () => Promise<AsyncIterable<ExecutionResult> | ExecutionResult>;

/**
 * Starts a subscription with `contextValue`; a function of its own, so that only the returned closure holds the context.
 * Its results are written as prebuilt frames, past graphql-ws's `onNext`: they are made what a client reads here.
 */
function groupStart(subscribe: (args: ExecutionArgs) => unknown, contextValue: unknown, args: ExecutionArgs): GroupStart {
  return async () => {
    const started = (await subscribe({ ...args, contextValue })) as AsyncIterable<ExecutionResult> | ExecutionResult;
    return isAsyncIterable(started)
      ? (mapAsyncIterator(started, clientResult) as AsyncIterable<ExecutionResult>)
      : (clientResult(started) as ExecutionResult);
  };
}

/** The Request of a WebSocket operation in yoga's params stage: it has no HTTP request, and nothing reads this one's address. */
const WS_REQUEST_URL = 'http://localhost/graphql';

export function attachGraphQLWs(options: GraphQLWsOptions): GraphQLWsServer {
  // Past maxPayload, ws closes the socket with 1009 Message Too Big.
  // Given the server's upgrades, not the server itself: ws would re-emit the server's own errors (a port
  // in use) on the WebSocket server, where graphql-ws reports them as its own failure. Other paths are still
  // refused by ws (400), as with `server`.
  const wss = new WebSocketServer({ noServer: true, path: options.path, maxPayload: options.limits.maxMessageBytes });
  const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) =>
    wss.handleUpgrade(request, socket, head, (client) => wss.emit('connection', client, request));
  options.server.on('upgrade', upgrade);
  const shared = createSharedSubscriptions();
  const shutdownHold = createShutdownHold();

  /**
   * A client that stops reading would have the gateway hold every result it
   * is sent (shared results are written without waiting for the socket).
   * 1013 Try Again Later: graphql-ws clients reconnect on it (and resume with
   * `after`), where 1008 would be final for them. The close frame waits behind
   * what the client has not read, so the socket is dropped soon after.
   */
  const closeIfBehind = (socket: WebSocket) => {
    if (socket.bufferedAmount <= options.maxUnsentBytes || socket.readyState !== socket.OPEN) return;
    socket.close(...WsClose.readingTooSlowly);
    setTimeout(() => socket.terminate(), CLOSE_HANDSHAKE_MS).unref();
  };

  /**
   * The execution arguments of one operation, or the errors that refuse it.
   * The operation passes yoga's params stage (`getResultForParams`, as an
   * HTTP request does: trusted documents, nesting, metrics and any params
   * rule added later), then `run` executes it: yoga's own handler would
   * execute each subscriber, this one lets subscribers share an execution.
   * graphql-ws then only hands on the result already made.
   */
  const prepare = async (
    ctx: Context<Record<string, unknown>, Extra<Connection>>,
    id: string,
    payload: SubscribePayload,
  ): Promise<ExecutionArgs | readonly GraphQLError[]> => {
    const authorization = authorizationOf(ctx.connectionParams);
    const connectionAfter = ctx.connectionParams?.after;
    let ran: ExecutionArgs | undefined;
    const serverContext = options.initialContext(authorization, connectionAfter);
    serverContext.execution = async ({ request, params, context }) => {
      // What yoga's own handler does first: its plugins find the request and parameters in the context.
      Object.assign(context, { request, params });
      const { schema, execute, subscribe, contextFactory, parse, validate } = options.yoga.getEnveloped(context);
      try {
        const document = parse(params.query!);
        const errors = validate(schema, document);
        if (errors.length > 0) return { errors };
        const isSubscription = getOperationAST(document, params.operationName)?.operation === OperationTypeNode.SUBSCRIPTION;
        // A subscription's execution may be shared with other connections: it stops when its subscribers do, not with one socket.
        if (!isSubscription) (context as GraphQLServerContext).caller = ctx.extra.caller ??= new ConnectedCaller();
        const contextValue = await contextFactory();
        const args: ExecutionArgs = { schema, document, operationName: params.operationName, variableValues: params.variables };
        ran = args;
        if (!isSubscription) return (await execute({ ...args, contextValue })) as ExecutionResult;
        // Every subscription is a group member (of a group of one when not sharing or resuming), so counts are uniform.
        const group =
          options.sharing && !resumes(document, params.variables, connectionAfter)
            ? JSON.stringify([params.query, params.operationName ?? null, params.variables ?? null, authorization ?? null])
            : randomUUID();
        // Results go to the socket as prebuilt `next` frames: one serialisation per event, not one per subscriber.
        const socket = ctx.extra.socket;
        const frameStart = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
        const send = (json: string) => {
          if (socket.readyState !== socket.OPEN) return;
          socket.send(`${frameStart}${json}}`);
          closeIfBehind(socket);
        };
        // A subscriber that joins a running group executes nothing of its own: its context (loaders,
        // scope) is only needed to start a group, and only the closure `groupStart` makes holds it.
        return await shared.join(group, groupStart(subscribe, contextValue, args), send);
      } catch (error) {
        // Parse errors and refusals of the context (rate limit) are the client's to read, not a socket failure.
        if (error instanceof GraphQLError) return { errors: [error] };
        throw error;
      }
    };
    let result: ExecutionResult | AsyncIterable<ExecutionResult> | undefined;
    try {
      const request = new options.yoga.fetchAPI.Request(WS_REQUEST_URL, { method: 'POST' });
      result = await options.yoga.getResultForParams({ params: payload as GraphQLParams, request }, serverContext);
    } catch (error) {
      // yoga's own checks of the parameters throw their refusals.
      if (error instanceof GraphQLError) return [error];
      throw error;
    } finally {
      serverContext.execution = undefined;
    }
    // Refused before execution (a params rule, parsing, validation): the protocol's `error` message, as ever.
    if (!ran) return (result as ExecutionResult | undefined)?.errors ?? [refuseOperation.unidentifiedOperation()];
    const made = result;
    return { ...ran, rootValue: { execute: () => made, subscribe: () => made } };
  };

  const disposable = serveGraphQLWs<Record<string, unknown>, Connection>(
    {
      connectionInitWaitTimeout: options.limits.initTimeoutMs,
      jsonMessageReviver: clientMessage,
      execute: (args) => (args as Rooted).rootValue.execute(args) as never,
      subscribe: async (args) => shutdownHold.wrap(await (args as Rooted).rootValue.subscribe(args)) as never,
      // Returning false closes the socket with 4403 Forbidden, as the protocol defines. 1013 Try Again
      // Later comes first when there is no verdict: graphql-ws clients retry it by default.
      onConnect: async (ctx) => {
        const verdict = await options.authorize(authorizationOf(ctx.connectionParams));
        if (verdict === 'retry') ctx.extra.socket.close(...WsClose.tryAgainLater);
        if (verdict !== 'accepted') return false;
        if (ctx.connectionParams?.demoSimulator === true && options.onDemoRequest) ctx.extra.demoRelease = options.onDemoRequest();
        return true;
      },
      onClose: (ctx) => {
        ctx.extra.caller?.markLeft();
        ctx.extra.demoRelease?.();
      },
      // graphql-ws calls this as each `subscribe` message arrives, so the slot is taken here, before any
      // await: subscribes that arrive in one burst are counted one by one, so a burst cannot pass the limit. A refusal is an
      // `error` for that id only, which clients hand to that one operation; the connection goes on.
      onSubscribe: (ctx, id, payload) => {
        const ids = ctx.extra.operations;
        if (ids.size >= options.limits.maxSubscriptions) {
          return [refuseOperation.tooManySubscriptions(options.limits.maxSubscriptions)];
        }
        ids.add(id);
        // graphql-ws calls onComplete only for an operation that ran: a refused or failed one gives its slot back here.
        return prepare(ctx, id, payload).then(
          (prepared) => {
            if (Array.isArray(prepared)) ids.delete(id);
            return prepared;
          },
          (error: unknown) => {
            ids.delete(id);
            throw error;
          },
        );
      },
      onComplete: (ctx, id) => void ctx.extra.operations.delete(id),
      // Other results (queries, mutations) are sent by graphql-ws: judged before each one goes, and sent as a client reads them.
      onNext: (ctx, _id, _payload, _args, result) => {
        closeIfBehind(ctx.extra.socket);
        return clientResult(result);
      },
      // Refusals (parsing, validation, params rules) go out as the protocol's `error` message: the same rule.
      onError: (_ctx, _id, _payload, errors) => errors.map(clientError),
    },
    wss,
    {
      keepAliveMs: options.limits.keepAliveMs > 0 ? options.limits.keepAliveMs : Number.POSITIVE_INFINITY,
      logger: options.logger,
      connection: () => ({ operations: new Set<string>() }),
    },
  );
  return {
    holdEnds: () => shutdownHold.hold(),
    async close(settleMs) {
      await shutdownHold.settled(settleMs);
      // Not 1001 after `complete`s: clients treat a completed subscription as finished and never resubscribe.
      for (const client of wss.clients) client.close(...WsClose.serviceRestart);
      for (let waited = 0; wss.clients.size > 0 && waited < CLOSE_HANDSHAKE_MS; waited += 10) await sleep(10);
      for (const client of wss.clients) client.terminate();
      await disposable.dispose();
      options.server.off('upgrade', upgrade);
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
    subscriptions: () => ({ subscribers: shared.members(), executions: shared.groups() }),
  };
}
