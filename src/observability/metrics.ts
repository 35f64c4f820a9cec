import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { UpstreamCall } from '../backends/rest/rest-backend.js';
import type { WebhookOutcome } from '../events/use-webhooks.js';
import { matchRoute, type RouteName } from '../rest/routes.js';

export interface GatewayMetrics {
  /**
   * Yoga plugin: serves `GET <path>` and observes every other request. Put it
   * before any plugin that ends responses in `onRequest` (webhooks, REST
   * passthrough): those stop later `onRequest` hooks, so `<path>` would never be
   * served and durations would be missing.
   */
  plugin(): Plugin;
  upstreamCall(call: UpstreamCall): void;
  /** `detail` is the sender's type for `ignored` (any text: the label is bounded here). */
  webhook(outcome: WebhookOutcome, detail?: string): void;
  /** Prometheus text exposition of everything in this instance's registry. */
  render(): Promise<string>;
}

export interface MetricsOptions {
  activeSubscriptions: () => number;
  /** Upstream circuit breaker state; the gauge is left out when not given. */
  circuitState?: () => string | undefined;
  /** @default '/metrics' */
  path?: string;
}

const PREFIX = 'vending_gateway_';
const GRAPHQL_PATH = '/graphql';
const WEBHOOK_PATH = '/webhooks';
const PROBE_PATHS = new Set(['/healthz', '/readyz']);
/** Client-chosen operation names are unbounded; past this many distinct ones they become `other`. */
const MAX_OPERATION_NAMES = 100;
/** Event types of ignored webhooks, sent by anyone without a secret: past this many distinct ones they become `other`. */
const MAX_IGNORED_TYPES = 20;
/** What a type must look like to become a label of its own; anything else is `other`. */
const SAFE_TYPE = /^[A-Za-z0-9_.:-]{1,64}$/;

const REST_TEMPLATES: Record<RouteName, string> = {
  getTransaction: 'GET /transactions/{id}',
  updatePayment: 'PUT /transactions/{id}/payment',
  listVendings: 'GET /vendings',
  getVending: 'GET /vendings/{id}',
};

interface RequestState {
  at: number | undefined;
  transport: string;
  operation: string;
  /** Set when a GraphQL result carried errors (yoga answers those 200 over application/json). */
  graphqlErrors: boolean;
}

/** Prometheus metrics for one gateway, in a registry of its own (several gateways share a test process). */
export function createMetrics(options: MetricsOptions): GatewayMetrics {
  const path = options.path ?? '/metrics';
  const register = new Registry();
  collectDefaultMetrics({ register });
  const registers = [register];

  const requests = new Counter({
    name: `${PREFIX}requests_total`,
    help: 'HTTP requests answered, by transport, operation and outcome',
    labelNames: ['transport', 'operation', 'outcome'] as const,
    registers,
  });
  const requestDuration = new Histogram({
    name: `${PREFIX}request_duration_seconds`,
    help: 'Time until the response was ready (for streams: until headers)',
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
    'bad-signature', 'unreadable', 'too-large', 'unsupported-encoding', 'unavailable',
  ];
  for (const reason of rejectReasons) webhooksRejected.labels({ reason }).inc(0);

  // Gauges are read when scraped, so they can never go stale between events.
  new Gauge({
    name: `${PREFIX}active_subscriptions`,
    help: 'GraphQL subscriptions open on this instance',
    registers,
    collect() {
      this.set(options.activeSubscriptions());
    },
  });
  const { circuitState } = options;
  if (circuitState) {
    new Gauge({
      name: `${PREFIX}upstream_circuit_open`,
      help: '1 while the upstream circuit breaker is open',
      registers,
      collect() {
        this.set(circuitState() === 'open' ? 1 : 0);
      },
    });
  }

  const states = new WeakMap<Request, RequestState>();
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

  /** Never raw paths or ids in labels: only the route templates of what this gateway serves. */
  function classify(method: string, pathname: string): Pick<RequestState, 'transport' | 'operation'> {
    if (pathname === GRAPHQL_PATH) return { transport: 'graphql', operation: 'anonymous' };
    if (pathname === WEBHOOK_PATH) return { transport: 'webhook', operation: 'POST /webhooks' };
    // Probes are polled constantly; kept apart so they do not drown the REST figures.
    if (PROBE_PATHS.has(pathname)) return { transport: 'probe', operation: `GET ${pathname}` };
    const match = matchRoute(method, pathname);
    return { transport: 'rest', operation: match.kind === 'route' ? REST_TEMPLATES[match.name] : 'other' };
  }

  function setOperation(request: Request | undefined, name: string | null | undefined): void {
    const state = request && states.get(request);
    if (!state || !name) return;
    // A batch of differently named operations is one request: do not attribute it to either.
    const label = operationLabel(name);
    state.operation = state.operation === 'anonymous' || state.operation === label ? label : 'batch';
  }

  const plugin: Plugin = {
    onRequest({ request, url, endResponse }) {
      if (url.pathname === path) {
        const headers = { 'content-type': register.contentType };
        if (request.method !== 'GET') return endResponse(new Response(null, { status: 405, headers: { allow: 'GET' } }));
        return register.metrics().then(
          (text) => endResponse(new Response(text, { status: 200, headers })),
          (error: unknown) => endResponse(new Response(`# metrics failed: ${String(error)}\n`, { status: 500 })),
        );
      }
      states.set(request, { at: performance.now(), ...classify(request.method, url.pathname), graphqlErrors: false });
    },
    onParams({ request, params }) {
      setOperation(request, params.operationName);
    },
    onExecute({ args }) {
      // Clients often send only `query Name {…}` without operationName: take it from the document.
      const context = args.contextValue as { request?: Request } | undefined;
      if (context?.request && states.get(context.request)?.operation === 'anonymous') {
        setOperation(context.request, getOperationAST(args.document, args.operationName)?.name?.value);
      }
    },
    onExecutionResult({ request, result }) {
      // Covers parse/validation errors too, which never reach onExecute; streams are not inspected.
      const state = states.get(request);
      if (state && result && 'errors' in result && result.errors?.length) state.graphqlErrors = true;
    },
    onResponse({ request, response }) {
      const url = new URL(request.url, 'http://localhost');
      if (url.pathname === path) return;
      // No state means an earlier plugin ended the response before ours ran: count it, time unknown.
      const state = states.get(request) ?? { at: undefined, ...classify(request.method, url.pathname), graphqlErrors: false };
      states.delete(request);
      const statusClass = `${Math.floor(response.status / 100)}xx`;
      const outcome = state.graphqlErrors && statusClass === '2xx' ? 'error' : statusClass;
      const labels = { transport: state.transport, operation: state.operation };
      requests.inc({ ...labels, outcome });
      if (state.at !== undefined) requestDuration.observe(labels, (performance.now() - state.at) / 1000);
    },
  };

  return {
    plugin: () => plugin,
    upstreamCall(call) {
      upstreamRequests.inc({ method: call.method, route: call.route, outcome: String(call.outcome) });
      upstreamDuration.observe({ route: call.route }, call.durationMs / 1000);
    },
    webhook(outcome, detail) {
      webhooksReceived.inc();
      if (outcome === 'published') webhooksPublished.inc();
      else if (outcome === 'duplicate') webhooksDeduplicated.inc();
      else if (outcome === 'ignored') webhooksIgnored.inc({ type: ignoredTypeLabel(detail) });
      else webhooksRejected.inc({ reason: outcome });
    },
    render: () => register.metrics(),
  };
}
