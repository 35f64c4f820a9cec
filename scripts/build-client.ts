import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { OPERATIONS_FILE, PERSISTED_DOCUMENTS_FILE, SCHEMA_FILE } from '../codegen.js';

/*
 * packages/client's `prepack` (so `npm pack` and `npm publish` there run it):
 * fills the package @vending-gateway/client with what `npm run codegen`
 * wrote, so another project installs the schema and the typed operations
 * instead of copying files by hand:
 *   dist/index.js, index.d.ts      the typed documents as ES modules with their types
 *   dist/index.cjs, index.d.cts    the same for require()
 *   schema/schema.graphql, operations/*.graphql, persisted-documents.json
 * The documents are plain objects, so the JavaScript imports nothing; the
 * types name `graphql` and `@graphql-typed-document-node/core`, the package's
 * peer dependencies, which a consumer's client already brings. The build
 * compiles the generated file as it is: codegen stays the one writer of the
 * operations, and a consumer needs no build step of its own.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLIENT_PACKAGE = join(ROOT, 'packages/client');

/** Compiles the generated operations into dist/ under `index` with the given extensions; throws with tsc's diagnostics. */
function compile(module: ts.ModuleKind, moduleResolution: ts.ModuleResolutionKind, js: string, dts: string): void {
  const source = join(ROOT, OPERATIONS_FILE);
  const stem = basename(source, '.ts');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2020,
    module,
    moduleResolution,
    declaration: true,
    strict: true,
    skipLibCheck: true,
    types: [],
    outDir: join(CLIENT_PACKAGE, 'dist'),
    rootDir: join(ROOT, OPERATIONS_FILE, '..'),
  };
  const program = ts.createProgram([source], options);
  const written: string[] = [];
  const result = program.emit(undefined, (fileName, text) => {
    const renamed = fileName.endsWith(`${stem}.d.ts`) ? dts : fileName.endsWith(`${stem}.js`) ? js : undefined;
    if (!renamed) throw new Error(`build-client: unexpected output ${fileName}`);
    writeFileSync(join(CLIENT_PACKAGE, 'dist', renamed), text);
    written.push(renamed);
  });
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics];
  if (diagnostics.length > 0) {
    const host = { getCanonicalFileName: (name: string) => name, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
    throw new Error(`build-client: ${OPERATIONS_FILE} does not compile:\n${ts.formatDiagnostics(diagnostics, host)}`);
  }
  if (written.length !== 2) throw new Error(`build-client: expected ${js} and ${dts}, got ${written.join(', ')}`);
}

export function buildClientPackage(): void {
  const rootVersion = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const clientVersion = (JSON.parse(readFileSync(join(CLIENT_PACKAGE, 'package.json'), 'utf8')) as { version: string }).version;
  // The package describes one release of the gateway: a different number would promise operations another gateway may not serve.
  if (clientVersion !== rootVersion)
    throw new Error(`build-client: packages/client is version ${clientVersion}, the gateway ${rootVersion}; give both the same`);

  for (const folder of ['dist', 'schema']) rmSync(join(CLIENT_PACKAGE, folder), { recursive: true, force: true });
  mkdirSync(join(CLIENT_PACKAGE, 'dist'), { recursive: true });
  compile(ts.ModuleKind.ES2020, ts.ModuleResolutionKind.Bundler, 'index.js', 'index.d.ts');
  compile(ts.ModuleKind.CommonJS, ts.ModuleResolutionKind.Node10, 'index.cjs', 'index.d.cts');

  cpSync(join(ROOT, SCHEMA_FILE), join(CLIENT_PACKAGE, 'schema/schema.graphql'));
  cpSync(join(ROOT, PERSISTED_DOCUMENTS_FILE), join(CLIENT_PACKAGE, 'schema/persisted-documents.json'));
  cpSync(join(ROOT, 'schema/operations'), join(CLIENT_PACKAGE, 'schema/operations'), { recursive: true });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    buildClientPackage();
    process.stdout.write('build-client: packages/client/dist and packages/client/schema written\n');
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  }
}
