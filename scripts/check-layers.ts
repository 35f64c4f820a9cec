import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LAYERS } from './layers.js';

/*
 * `npm run check:layers` (CI runs it): the layout of src/ beyond its imports,
 * whose direction ESLint holds (scripts/layers.ts): every top-level part has a
 * layer, only main.ts and errors.ts sit at the root, every file is reached
 * from somewhere, and no two files share a name (a name found in a stack
 * trace, a log line or a search names one file). Each finding is named with its file, and the script fails.
 */

export const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');

export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules') return [];
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The top-level part of src/ a path belongs to: its first folder, or its file name without `.ts`. */
export function partOf(path: string): string {
  const [first = ''] = relative(SRC, path).split(sep);
  return first.replace(/\.(ts|js)$/, '');
}

const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

const ROOT = resolve(SRC, '..');
/**
 * Where the code is entered: the process, the dashboard's browser code, and the scripts, benchmarks and code generation that import
 * sources.
 */
const ENTRY_DIRS = ['scripts', 'bench', 'web'];
const ENTRY_FILES = ['src/main.ts', 'codegen.ts'];

/** The relative imports of a file, resolved to the .ts files they name. */
const SIDE_EFFECT_IMPORT = /(?:^|\s)import\s+['"](\.{1,2}\/[^'"]+)['"]/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT), ...text.matchAll(SIDE_EFFECT_IMPORT)].map((match) =>
    resolve(dirname(file), match[1] ?? match[2] ?? '').replace(/\.js$/, '.ts'),
  );
}

/**
 * Files of src/ that nothing reaches: not imported, directly or through
 * others, from main.ts, scripts/, bench/ or codegen.ts. Such a file is dead
 * code a reader would still have to read.
 */
export function unreached(files = filesUnder(SRC)): string[] {
  const entries = [...ENTRY_FILES.map((file) => join(ROOT, file)), ...ENTRY_DIRS.flatMap((dir) => filesUnder(join(ROOT, dir)))];
  const seen = new Set<string>();
  const queue = entries.filter((file) => statSync(file, { throwIfNoEntry: false }));
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const next of importsOf(file)) if (!seen.has(next) && statSync(next, { throwIfNoEntry: false })) queue.push(next);
  }
  return files.filter((file) => !seen.has(file)).map((file) => relative(SRC, file));
}

/** Files at the root of src/ besides the process (main.ts) and the error catalogue (errors.ts): each belongs in a folder of its layer. */
export function looseRootFiles(files = filesUnder(SRC)): string[] {
  return files.map((file) => relative(SRC, file)).filter((file) => !file.includes(sep) && file !== 'main.ts' && file !== 'errors.ts');
}

/** Top-level parts of src/ that LAYERS does not place: their imports would go unchecked. */
export function partsWithoutLayer(files = filesUnder(SRC)): string[] {
  const placed = new Set(LAYERS.flat());
  return [...new Set(files.map(partOf))].filter((part) => !placed.has(part));
}

/** Names of src/ files used by more than one, each with its files. */
export function sharedNames(files = filesUnder(SRC)): string[] {
  const byName = new Map<string, string[]>();
  for (const file of files.map((file) => relative(SRC, file))) {
    const name = file.slice(file.lastIndexOf(sep) + 1);
    byName.set(name, [...(byName.get(name) ?? []), file]);
  }
  return [...byName]
    .filter(([, named]) => named.length > 1)
    .map(([name, named]) => `${name}: ${named.map((file) => `src/${file}`).join(', ')}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const findings = [
    ...unreached().map((file) => `src/${file}: reached from nothing (main.ts, scripts/, bench/, codegen.ts)`),
    ...looseRootFiles().map((file) => `src/${file}: at the root of src/, where only main.ts and errors.ts belong`),
    ...partsWithoutLayer().map((part) => `src/${part}: a part of src/ with no layer in scripts/layers.ts`),
    ...sharedNames().map((shared) => `${shared}: one file name for several files`),
  ];
  for (const finding of findings) process.stderr.write(`${finding}\n`);
  process.stdout.write(findings.length === 0 ? 'check:layers: the layout holds\n' : `check:layers: ${findings.length} finding(s)\n`);
  process.exit(findings.length === 0 ? 0 : 1);
}
