import { writeFileSync } from 'node:fs';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from '../src/graphql/schema.js';

/** Writes the SDL of the Pothos schema, sorted so diffs show only real changes. */
const target = new URL('../schema/schema.graphql', import.meta.url);
writeFileSync(target, `${printSchema(lexicographicSortSchema(schema))}\n`);
process.stdout.write(`wrote ${target.pathname}\n`);
