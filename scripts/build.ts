import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/*
 * `npm run build` (and `prepare`, which `npm install` and `npm ci` run):
 * src/ → dist/, one JavaScript file per source file, same layout, so that
 * `npm start` is `node dist/main.js` and the gateway is the process a
 * process manager signals (no npm → tsx → node chain). Files are read
 * relative to the code (web/, schema/) from dist/ as from src/: both sit at
 * the root. esbuild only strips types (a runtime dependency already: it
 * bundles the dashboard); `npm run typecheck` is the type check.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export async function buildDist(root = ROOT): Promise<void> {
  rmSync(`${root}dist`, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: ['src/**/*.ts'],
    outbase: 'src',
    outdir: 'dist',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildDist();
