import { resolve } from 'node:path';
import { generate } from '@graphql-codegen/cli';
import config, { PERSISTED_DOCUMENTS_FILE } from '../codegen.js';
import { configFiles } from './config-files.js';
import { syncGeneratedFiles, type GeneratedFile } from './generated-files.js';
import { buildPersistedDocuments } from './persisted-documents.js';

/*
 * npm run codegen          writes schema/schema.graphql, the typed documents, and
 *                          README.md's configuration table and .env.example (scripts/config.ts)
 * npm run codegen:check    writes nothing; fails naming each file that differs
 */
const root = resolve(import.meta.dirname, '..');
const check = process.argv.includes('--check');

const name = check ? 'codegen:check' : 'codegen';
/** What codegen wrote, as `generate` gives it (typed `any` by the CLI). */
let outputs: GeneratedFile[];
try {
  outputs = (await generate({ ...config, cwd: root, silent: true, errorsOnly: true }, false)) as GeneratedFile[];
} catch (error) {
  // Typically an operation in schema/operations/ that no longer fits the schema.
  const details = (error as { errors?: unknown[] }).errors?.map(String).join('\n') ?? String(error);
  process.stderr.write(`${name}: could not generate: ${details}\n`);
  process.exit(1);
}
const manifest = buildPersistedDocuments(resolve(root, 'schema/operations'));
outputs.push({ filename: PERSISTED_DOCUMENTS_FILE, content: `${JSON.stringify(manifest, null, 2)}\n` });

let stale: string[];
try {
  stale = syncGeneratedFiles(root, [...outputs, ...configFiles(root)], check);
} catch (error) {
  // README.md without its configuration table markers.
  process.stderr.write(`${name}: ${(error as Error).message}\n`);
  process.exit(1);
}

if (check && stale.length > 0) {
  for (const filename of stale) process.stderr.write(`${name}: ${filename} is out of date; run npm run codegen\n`);
  process.exit(1);
}
process.stdout.write(
  check
    ? 'codegen:check: generated files are up to date\n'
    : `codegen: wrote ${stale.length === 0 ? 'nothing (up to date)' : stale.join(', ')}\n`,
);
