/*
 * The REST contract's four paths (part 4), matched on the decoded path. A path
 * of ours with the wrong method is a 405 naming the allowed one; any other
 * path is not ours.
 */

export type RouteName = 'getTransaction' | 'updatePayment' | 'listVendings' | 'getVending';

export type RouteMatch =
  | { kind: 'route'; name: RouteName; id: string | undefined }
  | { kind: 'method-not-allowed'; allow: string }
  | { kind: 'unknown' };

const routes: Array<{ name: RouteName; method: string; pattern: RegExp }> = [
  { name: 'getTransaction', method: 'GET', pattern: /^\/transactions\/([^/]+)$/ },
  { name: 'updatePayment', method: 'PUT', pattern: /^\/transactions\/([^/]+)\/payment$/ },
  { name: 'listVendings', method: 'GET', pattern: /^\/vendings$/ },
  { name: 'getVending', method: 'GET', pattern: /^\/vendings\/([^/]+)$/ },
];

function decode(segment: string | undefined): string | undefined {
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function matchRoute(method: string, pathname: string): RouteMatch {
  const matching = routes.filter((route) => route.pattern.test(pathname));
  if (matching.length === 0) return { kind: 'unknown' };
  const route = matching.find((candidate) => candidate.method === method);
  if (!route) return { kind: 'method-not-allowed', allow: matching.map((r) => r.method).join(', ') };
  return { kind: 'route', name: route.name, id: decode(route.pattern.exec(pathname)?.[1]) };
}
