import type { CORSOptions } from 'graphql-yoga';

/*
 * CORS for /graphql (yoga answers it): only the configured origins
 * (CORS_ORIGINS), and never with credentials. yoga's default reflects any
 * Origin and allows credentials; the gateway's key travels in
 * `Authorization`, which a page sets itself, so no cookie ever needs to
 * cross, and an origin not listed gets no CORS header at all (its page
 * cannot read an answer; same-origin pages need none).
 */

/** Whether an Origin header matches one of the entries (`scheme://host`, with `:port` or `:*` for any port). */
export function originMatcher(entries: readonly string[]): (origin: string) => boolean {
  const exact = new Set<string>();
  const anyPort = new Set<string>();
  for (const entry of entries) {
    if (entry.endsWith(':*')) anyPort.add(entry.slice(0, -2).toLowerCase());
    else exact.add(entry.toLowerCase());
  }
  return (origin) => {
    const lower = origin.toLowerCase();
    if (exact.has(lower)) return true;
    const withoutPort = lower.replace(/:\d+$/, '');
    return anyPort.has(withoutPort);
  };
}

/** What a request may do cross-origin: the methods and headers the gateway's clients send. */
const ALLOWED: CORSOptions = {
  // Reflects the request's Origin (with `Vary: Origin`): the only ones that get here are listed.
  origin: ['*'],
  credentials: false,
  methods: ['GET', 'POST'],
  allowedHeaders: ['authorization', 'content-type', 'accept', 'x-request-id', 'last-event-id', 'x-graphql-yoga-csrf'],
  exposedHeaders: ['x-request-id', 'retry-after'],
  maxAge: 600,
};

/** yoga's `cors` option for these origins. */
export function corsFor(entries: readonly string[]): (request: Request) => CORSOptions | false {
  const allowed = originMatcher(entries);
  return (request) => {
    const origin = request.headers.get('origin');
    return origin !== null && allowed(origin) ? ALLOWED : false;
  };
}
