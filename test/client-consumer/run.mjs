/*
 * Run in the scratch project: the installed documents load (ES module and
 * CommonJS), are valid against the installed SDL, and the schema files are
 * reachable through the package's exports. Prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { buildSchema, print, validate } from 'graphql';
import * as esm from '@vending-gateway/client';

const require = createRequire(import.meta.url);
const cjs = require('@vending-gateway/client');
const schema = buildSchema(readFileSync(require.resolve('@vending-gateway/client/schema.graphql'), 'utf8'));
const documents = Object.entries(esm).filter(([name]) => name.endsWith('Document'));
const report = {
  documents: documents.map(([name]) => name),
  invalid: documents.flatMap(([name, document]) => validate(schema, document).map((error) => `${name}: ${error.message}`)),
  sameInCommonJs: documents.every(([name, document]) => print(cjs[name]) === print(document)),
  persisted: Object.keys(JSON.parse(readFileSync(require.resolve('@vending-gateway/client/persisted-documents.json'), 'utf8'))).length,
  operationSource: readFileSync(require.resolve('@vending-gateway/client/operations/transaction-detail.graphql'), 'utf8').includes(
    'query TransactionDetail',
  ),
};
process.stdout.write(JSON.stringify(report));
