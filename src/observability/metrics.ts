import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { UpstreamCall } from '../backends/rest/rest-backend.js';
import type { Drift } from '../contract/contract.js';
import type { WebhookOutcome } from '../events/webhook-route.js';
import type { Readiness } from '../http/readiness.js';

export interface GatewayMetrics {
  /** Yoga plugin: names the GraphQL operation in the request's scope and notes results with errors. */
  plugin(): Plugin;
  /** Counts one answered HTTP request (the front door calls it for every route). */
  answered(labels: { transport: string; operation: string | undefined }, status: number, graphqlErrors: boolean, seconds: number): void;
  upstreamCall(call: UpstreamCall): void;
  /** Counts one field the service sent otherwise than the contract shows (a success answer, read tolerantly). */
  contractDrift(drift: Drift): void;
  /** `detail` is the sender's type for `ignored` (any text: the label is bounded here). */
  webhook(outcome: WebhookOutcome, detail?: string): void;
  /**
   * A gauge read when scraped, offered by the feature that knows its value
   * (open subscriptions, the upstream breaker): nothing can go stale between events.
   */
  gauge(name: string, help: string, read: () => number): void;
  /** Prometheus text exposition of everything in this instance's registry. */
  render(): Promise<string>;
  /** The media type of `render()`'s text. */
  readonly contentType: string;
}

export interface MetricsOptions {
  /** What /readyz answers from; the readiness gauges are left out when not given. */
  readiness?: Readiness;
}

const PREFIX = 'vending_gateway_';
/** Client-chosen operation names are unbounded; past this many distinct ones they become `other`. */
const MAX_OPERATION_NAMES = 100;
/** Event types of ignored webhooks, sent by anyone without a secret: past this many distinct ones they become `other`. */
const MAX_IGNORED_TYPES = 20;
/** What a type must look like to become a label of its own; anything else is `other`. */
const SAFE_TYPE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * The operation label of a request on a keyed route (GraphQL, REST) that
 * came without a valid key, or asked for no key (GraphiQL's page, a CORS
 * preflight): such requests choose no label, and their series exist from the
 * start, so no number of them adds one.
 */
export const UNAUTHENTICATED = 'unauthenticated';
/** The `transport` of GraphQL operations over WebSocket, which have no HTTP request of their own. */
export const WEBSOCKET = 'websocket';
/** The transports whose routes take a key (graphql-route.ts, rest-routes.ts). */
const KEYED_TRANSPORTS = ['graphql', 'rest'];

/** What the metrics plugin keeps in a request's scope. */
export interface OperationScope {
  operation: string | undefined;
  graphqlErrors: boolean;
}

/** A WebSocket operation's record: it has no front-door scope to name it in. */
export type CountedOperation = OperationScope & { started: number };

/**
 * An operation's server context, as the plugin reads it: an HTTP request's scope, or its own record (both keys
 * declared on yoga's server context, GraphQLServerContext in graphql-server.ts, which this layer cannot import).
 */
interface Counted {
  scope?: OperationScope | undefined;
  counted?: CountedOperation | undefined;
}

/** Prometheus metrics for one gateway, in a registry of its own (several gateways share a test process). */
export function createMetrics(options: MetricsOptions): GatewayMetrics {
  const register = new Registry();
  collectDefaultMetrics({ register });
  const registers = [register];

  const requests = new Counter({
    name: `${PREFIX}requests_total`,
    help: 'HTTP requests answered and WebSocket operations, by transport, operation and outcome',
    labelNames: ['transport', 'operation', 'outcome'] as const,
    registers,
  });
  const requestDuration = new Histogram({
    name: `${PREFIX}request_duration_seconds`,
    help: 'Time until the response was ready (for streams: until headers; a WebSocket subscription: until it started)',
    labelNames: ['transport', 'operation'] as const,
    registers,
  });
  const upstreamRequests = new Counter({
    name: `${PREFIX}upstream_requests_total`,
    help: 'Calls to the upstream REST service, by outcome (status code or error code)',
    labelNames: ['method', 'route', 'outcome'] as const,
    registers,
  });
  const upstreamDuration = new Histogram({
    name: `${PREFIX}upstream_request_duration_seconds`,
    help: 'Upstream call duration including retries',
    labelNames: ['route'] as const,
    registers,
  });
  // Its labels are bounded: resources and fields the contract names, three kinds.
  const contractDrifts = new Counter({
    name: `${PREFIX}upstream_contract_drift_total`,
    help:
      "Fields of the upstream's success answers sent otherwise than the contract shows, by resource, field and kind (missing, " +
      'wrong_type, converted); the answers themselves count as their status in upstream_requests_total',
    labelNames: ['resource', 'field', 'kind'] as const,
    registers,
  });
  const webhooksReceived = new Counter({ name: `${PREFIX}webhooks_received_total`, help: 'Webhooks that reached an outcome', registers });
  const webhooksRejected = new Counter({
    name: `${PREFIX}webhooks_rejected_total`,
    help: 'Webhooks not taken, by reason',
    labelNames: ['reason'] as const,
    registers,
  });
  const webhooksDeduplicated = new Counter({ name: `${PREFIX}webhooks_deduplicated_total`, help: 'Webhooks already seen', registers });
  const webhooksPublished = new Counter({ name: `${PREFIX}webhooks_published_total`, help: 'Webhooks published as events', registers });
  const webhooksIgnored = new Counter({
    name: `${PREFIX}webhooks_ignored_total`,
    help: `Well-formed webhooks of another type, answered 200 and not published, by type (at most ${MAX_IGNORED_TYPES}, then "other")`,
    labelNames: ['type'] as const,
    registers,
  });
  // Series that exist from the start make rate() and absent-alerts behave before the first failure.
  const rejectReasons: ReadonlyArray<Exclude<WebhookOutcome, 'published' | 'duplicate' | 'ignored'>> = [
    'bad-signature',
    'unreadable',
    'too-large',
    'unsupported-encoding',
    'unavailable',
  ];
  for (const reason of rejectReasons) webhooksRejected.labels({ reason }).inc(0);
  for (const transport of KEYED_TRANSPORTS) {
    for (const outcome of ['2xx', '4xx', '5xx']) requests.labels({ transport, operation: UNAUTHENTICATED, outcome }).inc(0);
    requestDuration.zero({ transport, operation: UNAUTHENTICATED });
  }

  const { readiness } = options;
  if (readiness) {
    // An alert on readiness needs no probe of its own: Prometheus already scrapes every instance.
    new Gauge({
      name: `${PREFIX}ready`,
      help: '1 while /readyz answers 200 (accepting, events storable, upstream breaker not open)',
      registers,
      collect() {
        this.set(readiness.ready() ? 1 : 0);
      },
    });
    new Gauge({
      name: `${PREFIX}readiness_check`,
      help: '1 while the readiness check holds, 0 while it fails (check: accepting, events, upstream)',
      labelNames: ['check'] as const,
      registers,
      collect() {
        for (const [check, holds] of Object.entries(readiness.checks())) this.set({ check }, holds ? 1 : 0);
      },
    });
  }

  const operationNames = new Set<string>();
  const ignoredTypes = new Set<string>();

  function ignoredTypeLabel(type: string | undefined): string {
    if (type === undefined || !SAFE_TYPE.test(type)) return 'other';
    if (ignoredTypes.has(type)) return type;
    if (ignoredTypes.size >= MAX_IGNORED_TYPES) return 'other';
    ignoredTypes.add(type);
    return type;
  }

  function operationLabel(name: unknown): string {
    // operationName comes from the client's JSON: anything but a string is anonymous.
    const clean = (typeof name === 'string' ? name : '').replace(/[^A-Za-z0-9_]/g, '').slice(0, 64);
    if (clean === '') return 'anonymous';
    if (operationNames.has(clean)) return clean;
    if (operationNames.size >= MAX_OPERATION_NAMES) return 'other';
    operationNames.add(clean);
    return clean;
  }

  function setOperation(scope: OperationScope | undefined, name: string | null | undefined): void {
    if (!scope || !name) return;
    // A batch of differently named operations is one request: do not attribute it to either.
    const label = operationLabel(name);
    scope.operation = scope.operation === undefined || scope.operation === label ? label : 'batch';
  }

  function answered(
    labels: { transport: string; operation: string | undefined },
    status: number,
    graphqlErrors: boolean,
    seconds: number,
  ): void {
    const statusClass = `${Math.floor(status / 100)}xx`;
    const outcome = graphqlErrors && statusClass === '2xx' ? 'error' : statusClass;
    const { transport } = labels;
    const operation = labels.operation ?? 'anonymous';
    requests.inc({ transport, operation, outcome });
    requestDuration.observe({ transport, operation }, seconds);
  }

  /**
   * Operations that came without a front door's request (WebSocket ones):
   * the plugin counts them itself, from the params stage, which they pass
   * like HTTP requests (operation-rules.ts), to their result (a
   * subscription's: once it started; nothing per event). Their record rides
   * in the operation's server context, as an HTTP request's scope does.
   */
  // A WebSocket operation's context gets a call scope of its own later (context.ts): its record is asked first.
  const scopeIn = (context: Counted | undefined): OperationScope | undefined => context?.counted ?? context?.scope;

  /** Names the GraphQL operation of a request in its scope, and notes a result with errors. */
  const plugin: Plugin = {
    onParams({ params, context }) {
      const counted = context as Counted;
      if (!counted.scope) counted.counted = { operation: undefined, graphqlErrors: false, started: performance.now() };
      setOperation(scopeIn(counted), params.operationName);
    },
    onExecute({ args }) {
      // Clients often send only `query Name {…}` without operationName: take it from the document.
      const scope = scopeIn(args.contextValue as Counted);
      if (scope && scope.operation === undefined) setOperation(scope, getOperationAST(args.document, args.operationName)?.name?.value);
    },
    onSubscribe({ args }) {
      const scope = scopeIn(args.contextValue as Counted);
      if (scope && scope.operation === undefined) setOperation(scope, getOperationAST(args.document, args.operationName)?.name?.value);
    },
    onExecutionResult({ result, context }) {
      // Covers parse/validation errors too, which never reach onExecute; streams are not inspected.
      const errors = !!result && 'errors' in result && !!result.errors?.length;
      const counted = context as Counted;
      const operation = counted.counted;
      if (!operation) {
        if (errors && counted.scope) counted.scope.graphqlErrors = true;
        return;
      }
      counted.counted = undefined;
      answered({ transport: WEBSOCKET, operation: operation.operation }, 200, errors, (performance.now() - operation.started) / 1000);
    },
  };

  return {
    plugin: () => plugin,
    gauge(name, help, read) {
      new Gauge({
        name: `${PREFIX}${name}`,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    },
    answered,
    upstreamCall(call) {
      upstreamRequests.inc({ method: call.method, route: call.route, outcome: String(call.outcome) });
      upstreamDuration.observe({ route: call.route }, call.durationMs / 1000);
    },
    contractDrift: ({ resource, field, kind }) => contractDrifts.inc({ resource, field, kind }),
    webhook(outcome, detail) {
      webhooksReceived.inc();
      if (outcome === 'published') webhooksPublished.inc();
      else if (outcome === 'duplicate') webhooksDeduplicated.inc();
      else if (outcome === 'ignored') webhooksIgnored.inc({ type: ignoredTypeLabel(detail) });
      else webhooksRejected.inc({ reason: outcome });
    },
    render: () => register.metrics(),
    contentType: register.contentType,
  };
}
