import { readFile } from 'node:fs/promises';
import { build } from 'esbuild';
import type { Route } from '../http/front-door.js';

/*
 * The live dashboard at `/` (web/): a page, a stylesheet and one script that
 * esbuild bundles from web/app.ts the first time it is asked for, so there is
 * no build step to forget and nothing comes from a CDN.
 */

const WEB = new URL('../../web/', import.meta.url);

/**
 * The page's policy: its own script and stylesheet, no inline code, and it
 * talks to /graphql only. Images may come from anywhere over https: product
 * thumbnails are addresses the service sends (`productThumbnail`), data shown
 * as it came, not the page's own assets.
 */
const PAGE_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  body: string;
  type: string;
}

async function bundleScript(): Promise<string> {
  const result = await build({
    entryPoints: [new URL('app.ts', WEB).pathname],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]?.text ?? '';
}

export function dashboardRoutes(onError: (error: unknown) => void): Route[] {
  const loaders: Record<string, () => Promise<Asset>> = {
    '/': async () => ({ body: await readFile(new URL('index.html', WEB), 'utf8'), type: 'text/html; charset=utf-8' }),
    '/dashboard/styles.css': async () => ({ body: await readFile(new URL('styles.css', WEB), 'utf8'), type: 'text/css; charset=utf-8' }),
    '/dashboard/app.js': async () => ({ body: await bundleScript(), type: 'text/javascript; charset=utf-8' }),
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

  return Object.entries(loaders).map(([url, load]): Route => ({
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
        return reply.code(500).header('content-type', 'text/plain').send('The dashboard could not be built; see the gateway log.');
      }
    },
  }));
}
