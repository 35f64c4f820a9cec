import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Route } from '../http/front-door.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import { FAVICON_SVG, productThumbnail } from './demo-images.js';

/*
 * The live dashboard at `/` (web/): a page, a stylesheet and one script,
 * bundled from web/app.ts by `npm run build` into dist/web/ (nothing comes
 * from a CDN, and a production install carries no bundler). The routes only
 * read those files, once each. The path climbs to the root and back down to
 * dist/web/, so it is the same directory whether this module runs from dist/
 * (`npm start`) or from src/ (`npm run dev` and the tests, which build first).
 */

const WEB = new URL('../../dist/web/', import.meta.url);

/**
 * The page's policy: its own script and stylesheet, no inline code, and it
 * talks to /graphql only. Images may come from the gateway (the demo's
 * thumbnails, the favicon) or anywhere over https: product thumbnails are
 * addresses the service sends (`productThumbnail`), data shown as it came,
 * not the page's own assets.
 */
const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; " +
  "form-action 'none'; frame-ancestors 'none'";

interface Asset {
  body: string;
  type: string;
}

async function readBuilt(file: string): Promise<string> {
  try {
    return await readFile(new URL(file, WEB), 'utf8');
  } catch (error) {
    throw new Error(`the dashboard's ${fileURLToPath(new URL(file, WEB))} could not be read: \`npm run build\` writes it`, {
      cause: error,
    });
  }
}

export function dashboardRoutes(onError: (error: unknown) => void): Route[] {
  const loaders: Record<string, () => Promise<Asset>> = {
    '/': async () => ({ body: await readBuilt('index.html'), type: 'text/html; charset=utf-8' }),
    '/dashboard/styles.css': async () => ({ body: await readBuilt('styles.css'), type: 'text/css; charset=utf-8' }),
    '/dashboard/app.js': async () => ({ body: await readBuilt('app.js'), type: 'text/javascript; charset=utf-8' }),
  };
  const cache = new Map<string, Promise<Asset>>();

  function asset(pathname: string, load: () => Promise<Asset>): Promise<Asset> {
    let held = cache.get(pathname);
    if (!held) {
      held = load();
      cache.set(pathname, held);
      held.catch(() => cache.delete(pathname));
    }
    return held;
  }

  const svg = (reply: Parameters<Route['handler']>[1], body: string) =>
    reply
      .headers({
        'content-type': 'image/svg+xml',
        'cache-control': 'public, max-age=86400',
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
      })
      .send(body);
  const images: Route[] = [
    // Browsers ask for /favicon.ico on every page of the origin (GraphiQL's included); an SVG answers it.
    ...['/favicon.ico', '/dashboard/favicon.svg'].map((url): Route => ({
      method: 'GET',
      url,
      transport: 'dashboard',
      operation: `GET ${url}`,
      handler: async (_request, reply) => svg(reply, FAVICON_SVG),
    })),
    {
      method: 'GET',
      url: '/dashboard/products/:file',
      transport: 'dashboard',
      operation: 'GET /dashboard/products/{file}',
      async handler(request, reply) {
        const image = productThumbnail((request.params as { file: string }).file);
        if (image === undefined) return reply.code(404).header('content-type', 'text/plain').send(refusalMessage.dashboardImageNotFound());
        return svg(reply, image);
      },
    },
  ];

  return [
    ...images,
    ...Object.entries(loaders).map(([url, load]): Route => ({
      method: 'GET',
      url,
      transport: 'dashboard',
      operation: `GET ${url}`,
      async handler(_request, reply) {
        try {
          const { body, type } = await asset(url, load);
          if (type.startsWith('text/html')) reply.header('content-security-policy', PAGE_POLICY);
          return reply.headers({ 'content-type': type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' }).send(body);
        } catch (error) {
          onError(error);
          return reply.code(500).header('content-type', 'text/plain').send(refusalMessage.dashboardUnreadable());
        }
      },
    })),
  ];
}
