import { copyFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/*
 * `npm run build` (and `prepare`, which `npm install` and `npm ci` run):
 * src/ → dist/, one JavaScript file per source file, same layout, so that
 * `npm start` is `node dist/main.js` and the gateway is the process a
 * process manager signals (no npm → tsx → node chain). esbuild only strips
 * types; `npm run typecheck` is the type check.
 *
 * The dashboard (web/) → dist/web/: its page and stylesheet as they are and
 * web/app.ts bundled into one script, so the gateway serves files and a
 * production install needs neither the build tools nor web/ and the typed
 * documents it imports. The gateway reads dist/web/ whether it runs from
 * dist/ or from src/ (`npm run dev`, the tests), which is why those run this
 * build first. Other files read relative to the code (schema/) sit at the
 * root, reached from dist/ as from src/.
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
  await build({
    absWorkingDir: root,
    entryPoints: ['web/app.ts'],
    outfile: 'dist/web/app.js',
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
  });
  for (const file of ['index.html', 'styles.css']) copyFileSync(`${root}web/${file}`, `${root}dist/web/${file}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildDist();
