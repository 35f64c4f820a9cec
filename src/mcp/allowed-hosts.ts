import type { GatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';

/*
 * DNS rebinding protection for /mcp, as the MCP SDK's advisory asks
 * (GHSA-w48q-cv73-mx4w) and the MCP transport spec says ("Servers MUST
 * validate the Origin header"): a page of another site whose name was made
 * to resolve to this gateway reaches it with that name in `Host`, and with
 * its own origin in `Origin`. Only the names the gateway is known by pass.
 * The key in `Authorization` is the main defence (a page cannot read it);
 * this one holds even for a key a browser would send by itself.
 */

/** Loopback names any local client uses. */
const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];
/** Listening on every interface names no host. */
const ANY_INTERFACE = new Set(['0.0.0.0', '::', '[::]']);

/** A host name as `URL` writes it (lower case, IPv6 in brackets); undefined when it is none. */
function hostnameOf(hostAndPort: string): string | undefined {
  try {
    return new URL(`http://${hostAndPort}`).hostname;
  } catch {
    return undefined;
  }
}

export interface AllowedHostsOptions {
  /** HOST: the address the gateway listens on, a name clients may use unless it is every interface. */
  listenHost: string;
  /** MCP_ALLOWED_HOSTS: public names (a load balancer's). */
  extra: readonly string[];
}

/** The names `/mcp` answers to. */
export function allowedHostnames({ listenHost, extra }: AllowedHostsOptions): ReadonlySet<string> {
  const listen = listenHost.includes(':') && !listenHost.startsWith('[') ? `[${listenHost}]` : listenHost;
  const names = [...LOOPBACK, ...(ANY_INTERFACE.has(listen) ? [] : [listen]), ...extra];
  return new Set(names.map((name) => hostnameOf(name) ?? name.toLowerCase()));
}

/**
 * The refusal of a request whose `Host` or `Origin` is not allowed, or undefined when both are. `Origin` is optional (clients other than browsers send none); a
 * page's, when sent, must name an allowed host too. `null` (a sandboxed page) names none.
 */
export function hostProblem(allowed: ReadonlySet<string>, host: string | undefined, origin: string | undefined): GatewayError | undefined {
  const hostname = host === undefined ? undefined : hostnameOf(host);
  if (hostname === undefined || !allowed.has(hostname)) return refuse.foreignHost();
  if (origin === undefined) return undefined;
  let originHost: string | undefined;
  try {
    const url = new URL(origin);
    originHost = url.protocol === 'http:' || url.protocol === 'https:' ? url.hostname : undefined;
  } catch {
    originHost = undefined;
  }
  if (originHost === undefined || !allowed.has(originHost)) return refuse.foreignOrigin();
  return undefined;
}

/** The front door's guard for /mcp's routes: a request naming another host or site is refused (403) before anything else. */
export function refuseForeignHosts(allowed: ReadonlySet<string>) {
  return (request: { headers: Record<string, string | string[] | undefined> }): void => {
    const { host, origin } = request.headers;
    const problem = hostProblem(allowed, typeof host === 'string' ? host : undefined, typeof origin === 'string' ? origin : undefined);
    if (problem) throw problem;
  };
}
