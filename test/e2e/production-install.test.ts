import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

/*
 * A production install is `npm ci && npm run build && npm prune --omit=dev`:
 * the build tools are gone at run time. So they are devDependencies, and
 * dist/ (built by vitest's global set-up) may import only Node's modules and
 * the packages listed in `dependencies`. Pruning the real tree here would
 * break the other tests: the import scan stands in for the prune. That the
 * image's files are enough to serve is deploy-artifacts.test.ts's question.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIST = join(ROOT, 'dist');
const BUILD_TOOLS = ['esbuild', 'tsx', 'typescript'];

const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; undefined for relative paths and Node's own modules. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  if (builtinModules.includes(specifier.split('/')[0]!)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

describe('package.json and dist/ for a production install', () => {
  it('lists the build tools as devDependencies only', () => {
    for (const tool of BUILD_TOOLS) {
      expect(Object.keys(packageJson.dependencies), `${tool} is a runtime dependency`).not.toContain(tool);
      expect(Object.keys(packageJson.devDependencies), `${tool} is not a devDependency`).toContain(tool);
    }
  });

  it('imports from dist/ only Node built-ins and packages listed in dependencies', async () => {
    const scripts = filesUnder(DIST).filter((file) => file.endsWith('.js') && !file.startsWith(join(DIST, 'web')));
    expect(scripts.length).toBeGreaterThan(20);
    // esbuild parses the files (static imports, re-exports, import() of a literal) and lists what it leaves external: every package.
    const { metafile } = await build({
      entryPoints: scripts,
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      outdir: join(DIST, 'unused'),
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const missing: string[] = [];
    for (const [file, input] of Object.entries(metafile.inputs)) {
      for (const { path, external } of input.imports) {
        const name = external ? packageOf(path) : undefined;
        if (name && !Object.hasOwn(packageJson.dependencies, name)) missing.push(`${file} imports ${path}`);
      }
    }
    expect(Object.keys(metafile.inputs).length).toBe(scripts.length);
    expect(missing).toEqual([]);
  });

  it('holds the dashboard the routes serve: its page, stylesheet and bundled script', () => {
    const web = filesUnder(join(DIST, 'web'))
      .map((file) => relative(join(DIST, 'web'), file))
      .sort();
    expect(web).toEqual(['app.js', 'index.html', 'styles.css']);
  });
});
