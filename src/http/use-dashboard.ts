import { readFile } from 'node:fs/promises';
import { build } from 'esbuild';
import type { Plugin } from 'graphql-yoga';

/*
 * The live dashboard at `/` (web/): a page, a stylesheet and one script that
 * esbuild bundles from web/app.ts the first time it is asked for, so there is
 * no build step to forget and nothing comes from a CDN.
 */

const WEB = new URL('../../web/', import.meta.url);

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

export function useDashboard(onError: (error: unknown) => void): Plugin {
  const loaders: Record<string, () => Promise<Asset>> = {
    '/': async () => ({ body: await readFile(new URL('index.html', WEB), 'utf8'), type: 'text/html; charset=utf-8' }),
    '/dashboard/styles.css': async () => ({ body: await readFile(new URL('styles.css', WEB), 'utf8'), type: 'text/css; charset=utf-8' }),
    '/dashboard/app.js': async () => ({ body: await bundleScript(), type: 'text/javascript; charset=utf-8' }),
  };
  const cache = new Map<string, Promise<Asset>>();

  return {
    // Synchronous for every other path: an async hook would put each request through an extra promise.
    onRequest({ request, url, endResponse }) {
      const load = loaders[url.pathname];
      if (!load || request.method !== 'GET') return;
      return serve(url.pathname, load, endResponse);
    },
  };

  async function serve(pathname: string, load: () => Promise<Asset>, endResponse: (response: Response) => void): Promise<void> {
    let asset = cache.get(pathname);
    if (!asset) {
      asset = load();
      cache.set(pathname, asset);
      asset.catch(() => cache.delete(pathname));
    }
    try {
      const { body, type } = await asset;
      endResponse(new Response(body, { headers: { 'content-type': type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' } }));
    } catch (error) {
      onError(error);
      endResponse(new Response('The dashboard could not be built; see the gateway log.', { status: 500, headers: { 'content-type': 'text/plain' } }));
    }
  }
}
