import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as operations from '../../src/graphql/generated/operations.js';

/*
 * @vending-gateway/client as another project gets it: `npm pack` in
 * packages/client (its prepack builds it), the tarball installed into a
 * scratch project in a temporary folder, then a small Apollo Client and urql
 * program (test/client-consumer/) type-checked against it with the repository's
 * tsc, and the documents loaded with node. The install is offline with an
 * empty cache: the package has no dependencies of its own, and its peers
 * (graphql, @graphql-typed-document-node/core) and the clients are linked from
 * this repository's node_modules, as a consumer's own install would provide them.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONSUMER = join(ROOT, 'test/client-consumer');
const TSC = join(ROOT, 'node_modules/.bin/tsc');
const LINKED = ['graphql', '@graphql-typed-document-node/core', '@apollo/client', '@urql/core'];
const run = promisify(execFile);

// npm's own variables of an `npm test` run (npm_config_*) would steer the nested npm; the scratch project gets a plain environment.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

let scratch: string;
let app: string;
let tarball: string;

async function tsc(project: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(TSC, ['-p', project], { cwd: app, env });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'vending-client-package-'));
  const packed = join(scratch, 'packed');
  mkdirSync(packed);
  await run('npm', ['pack', '--pack-destination', packed], { cwd: join(ROOT, 'packages/client'), env });
  const [file] = readdirSync(packed);
  tarball = join(packed, file!);

  app = join(scratch, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'dashboard', private: true, type: 'module' }));
  // --legacy-peer-deps: npm would otherwise fetch the peers; they are linked below instead.
  await run(
    'npm',
    [
      'install',
      tarball,
      '--offline',
      '--cache',
      join(scratch, 'npm-cache'),
      '--no-audit',
      '--no-fund',
      '--legacy-peer-deps',
      '--ignore-scripts',
    ],
    { cwd: app, env },
  );
  for (const name of LINKED) {
    mkdirSync(dirname(join(app, 'node_modules', name)), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', name), join(app, 'node_modules', name));
  }
  cpSync(CONSUMER, app, { recursive: true });
}, 120_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('@vending-gateway/client packed and installed in another project', () => {
  it('holds the SDL, the operations, the built documents with their declarations, and needs only its peers', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout
      .trim()
      .split('\n')
      .map((line) => line.replace(/^package\//, ''))
      .sort();
    const operationFiles = readdirSync(join(ROOT, 'schema/operations')).map((name) => `schema/operations/${name}`);
    expect(files).toEqual(
      [
        'README.md',
        'dist/index.cjs',
        'dist/index.d.cts',
        'dist/index.d.ts',
        'dist/index.js',
        'package.json',
        'schema/persisted-documents.json',
        'schema/schema.graphql',
        ...operationFiles,
      ].sort(),
    );

    const installed = JSON.parse(readFileSync(join(app, 'node_modules/@vending-gateway/client/package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const gateway = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(gateway.version);
    expect(installed.dependencies).toBeUndefined();
    expect(Object.keys(installed.peerDependencies as object).sort()).toEqual(['@graphql-typed-document-node/core', 'graphql']);
    expect(readFileSync(join(app, 'node_modules/@vending-gateway/client/schema/schema.graphql'), 'utf8')).toBe(
      readFileSync(join(ROOT, 'schema/schema.graphql'), 'utf8'),
    );
  });

  it('type-checks an Apollo Client and a urql program (ES module and CommonJS, Node16 resolution)', async () => {
    expect(await tsc('tsconfig.json')).toEqual({ code: 0, output: '' });
  }, 120_000);

  it("type-checks the same programs with a bundler's module resolution", async () => {
    expect(await tsc('tsconfig.bundler.json')).toEqual({ code: 0, output: '' });
  }, 120_000);

  it('has declarations that compile without skipLibCheck', async () => {
    expect(await tsc('tsconfig.declarations.json')).toEqual({ code: 0, output: '' });
  }, 120_000);

  it('loads every typed document in node, valid against the packed SDL, the same through require()', async () => {
    const { stdout } = await run('node', ['run.mjs'], { cwd: app, env });
    const report = JSON.parse(stdout) as {
      documents: string[];
      invalid: string[];
      sameInCommonJs: boolean;
      persisted: number;
      operationSource: boolean;
    };
    const documents = Object.keys(operations)
      .filter((name) => name.endsWith('Document'))
      .sort();
    const manifest = JSON.parse(readFileSync(join(ROOT, 'schema/persisted-documents.json'), 'utf8')) as object;
    expect(report).toEqual({
      documents,
      invalid: [],
      sameInCommonJs: true,
      persisted: Object.keys(manifest).length,
      operationSource: true,
    });
  }, 60_000);
});
