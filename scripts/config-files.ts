import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderEnvExample, withReadmeTable } from '../src/config/docs.js';
import type { GeneratedFile } from './generated-files.js';

/** The files generated from the configuration spec, as they should be under `root`. */
export function configFiles(root: string): GeneratedFile[] {
  const readme = readFileSync(resolve(root, 'README.md'), 'utf8');
  return [
    { filename: 'README.md', content: withReadmeTable(readme) },
    { filename: '.env.example', content: renderEnvExample() },
  ];
}
