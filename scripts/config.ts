import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { configFiles } from './config-files.js';
import { syncGeneratedFiles } from './generated-files.js';

/*
 * npm run config          rewrites README.md's configuration table and .env.example from src/config/spec.ts
 * npm run config:check    writes nothing; fails naming each file that is out of date
 * --root DIR              works on another copy of the repository (the tests use one)
 * (`npm run codegen` and `codegen:check` do the same, among the other generated files.)
 */
const { values } = parseArgs({
  options: { check: { type: 'boolean', default: false }, root: { type: 'string', default: resolve(import.meta.dirname, '..') } },
});
const name = values.check ? 'config:check' : 'config';
let stale: string[];
try {
  stale = syncGeneratedFiles(values.root, configFiles(values.root), values.check);
} catch (error) {
  process.stderr.write(`${name}: ${(error as Error).message}\n`);
  process.exit(1);
}
if (values.check && stale.length > 0) {
  for (const filename of stale) process.stderr.write(`${name}: ${filename} is out of date; run npm run config\n`);
  process.exit(1);
}
process.stdout.write(
  values.check
    ? 'config:check: README.md and .env.example are up to date\n'
    : `config: wrote ${stale.length === 0 ? 'nothing (up to date)' : stale.join(', ')}\n`,
);
