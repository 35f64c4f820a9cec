import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import type { GraphiQLOptions } from 'graphql-yoga';
import { errorEnvelope } from '../errors.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import type { Route } from '../http/front-door.js';

/*
 * GraphiQL from the gateway's own assets, so it works on a machine with no
 * internet and under a Content-Security-Policy that names no other host.
 * yoga's own page loads GraphiQL from a CDN; @graphql-yoga/render-graphiql
 * ships the same build, but its page inlines all of it (about 9 MB) into
 * every answer, which a strict policy would have to allow as inline script.
 * Here the page is small, names its scripts and styles by URL, and those
 * (the package's own text) are plain routes, cached by a content hash in
 * their path. The bundle is read only when the page is first asked for:
 * a gateway with GraphiQL off, or never opened, never holds it.
 */

/** Where the assets are served; the content hash follows, then the file name. */
export const GRAPHIQL_ASSETS_PATH = '/graphiql';

/**
 * The page's policy. Styles may be inline because Monaco and GraphiQL's
 * components write `<style>` elements at run time; scripts, workers, fetches
 * and images are the gateway's own only.
 */
export const GRAPHIQL_PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "worker-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  type: string;
  body: Buffer;
  /** The body gzipped, for clients that accept it (the bundle shrinks about 4×). */
  gzipped: Buffer;
}

interface Assets {
  /** Content hash of the whole set: part of every asset's URL. */
  version: string;
  files: ReadonlyMap<string, Asset>;
}

const gzip = promisify(gzipCallback);
const JS = 'text/javascript; charset=utf-8';

// Set before the bundle loads (it reads MonacoEnvironment when it creates its workers): the workers come from here too.
const ENVIRONMENT_SCRIPT =
  `(() => {
  const base = document.currentScript.src;
  const files = { editorWorkerService: 'editor.worker.js', json: 'json.worker.js', graphql: 'graphql.worker.js' };
  self.MonacoEnvironment = { globalAPI: false, ` +
  `getWorkerUrl: (_module, label) => new URL(files[label] ?? files.editorWorkerService, base).href };
})();
`;

// The options travel as JSON in a non-executed script element: no inline script for the policy to allow.
const START_SCRIPT =
  `YogaGraphiQL.renderYogaGraphiQL(document.querySelector('#root'), ` +
  `JSON.parse(document.getElementById('graphiql-options').textContent));
`;

async function loadAssets(): Promise<Assets> {
  const bundle = await import('@graphql-yoga/render-graphiql/graphiql');
  const favicon = /^data:[^;]+;base64,(.*)$/s.exec(bundle.favicon)?.[1];
  const sources: Array<[string, string, string | Buffer]> = [
    ['graphiql.js', JS, bundle.js],
    ['graphiql.css', 'text/css; charset=utf-8', bundle.css],
    ['editor.worker.js', JS, bundle.editorWorkerService],
    ['json.worker.js', JS, bundle.jsonWorker],
    ['graphql.worker.js', JS, bundle.graphqlWorker],
    ['environment.js', JS, ENVIRONMENT_SCRIPT],
    ['start.js', JS, START_SCRIPT],
    ['favicon.ico', 'image/x-icon', Buffer.from(favicon ?? '', 'base64')],
  ];
  const hash = createHash('sha256');
  const files = new Map<string, Asset>();
  for (const [name, type, text] of sources) {
    const body = Buffer.from(text);
    hash.update(name).update(body);
    // zlib runs in libuv's pool: the event loop goes on serving while the bundle compresses (once).
    files.set(name, { type, body, gzipped: await gzip(body) });
  }
  return { version: hash.digest('hex').slice(0, 16), files };
}

/** Text that cannot end the script element it sits in, nor open a comment. */
function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The query GraphiQL opens on: one that runs as it stands (Run, or Ctrl-Enter) and shows what the gateway adds to
 * the service: the fleet with each machine's state, and the last hour's sales per currency. With the development key
 * in the headers (no API_KEYS), it answers at once. Anonymous: GraphiQL keeps a named operation's name after the
 * text is replaced, and would ask the gateway for an operation the new text does not have.
 */
export const GRAPHIQL_FIRST_QUERY = `# vending-gateway: press Run (Ctrl-Enter) for the fleet and the last hour's sales.
# The schema is in the Docs panel; docs/api.md has more examples.
{
  vendings(first: 5) {
    totalCount
    nodes {
      identifier
      countryCode
      currencyCode
      status
      online
      offlineSince
    }
  }
  transactionStats {
    count
    byCurrency {
      currency
      totalSold
      topProductsByQuantity(first: 3) {
        productName
        quantity
        amount
      }
    }
  }
}
`;

export interface GraphiQLPage {
  /** yoga's `renderGraphiQL`: the page, naming the assets of `routes`. */
  render(options: GraphiQLOptions): Promise<string>;
  /** The assets' routes on the front door: no key (the page's own requests carry none), cached for good. */
  routes: Route[];
}

export function createGraphiQLPage(): GraphiQLPage {
  let held: Promise<Assets> | undefined;
  const assets = (): Promise<Assets> => {
    if (!held) {
      held = loadAssets();
      held.catch(() => (held = undefined));
    }
    return held;
  };

  async function render(options: GraphiQLOptions): Promise<string> {
    const base = `${GRAPHIQL_ASSETS_PATH}/${(await assets()).version}/`;
    return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(options.title ?? 'GraphiQL')}</title>
<link rel="icon" href="${base}favicon.ico">
<link rel="stylesheet" href="${base}graphiql.css">
</head>
<body id="body" class="no-focus-outline">
<noscript>You need to enable JavaScript to run GraphiQL.</noscript>
<div id="root"></div>
<script type="application/json" id="graphiql-options">${scriptSafeJson(options)}</script>
<script src="${base}environment.js"></script>
<script src="${base}graphiql.js"></script>
<script src="${base}start.js"></script>
</body>
</html>
`;
  }

  const assetRoute: Route = {
    method: 'GET',
    url: `${GRAPHIQL_ASSETS_PATH}/:version/:file`,
    transport: 'graphiql',
    operation: `GET ${GRAPHIQL_ASSETS_PATH}/{version}/{file}`,
    async handler(request, reply) {
      const { version, file } = request.params as { version: string; file: string };
      const { version: current, files } = await assets();
      const asset = files.get(file);
      // Another version is a page from before a restart onto other assets: reloading the page fixes it.
      if (version !== current || !asset) return reply.code(404).send(errorEnvelope(refusalMessage.graphiqlAssetGone()));
      const gzipped = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
      reply.headers({
        'content-type': asset.type,
        'cache-control': 'public, max-age=31536000, immutable',
        'x-content-type-options': 'nosniff',
        vary: 'accept-encoding',
        'cross-origin-resource-policy': 'same-origin',
      });
      if (gzipped) reply.header('content-encoding', 'gzip');
      return reply.send(gzipped ? asset.gzipped : asset.body);
    },
  };

  return { render, routes: [assetRoute] };
}
