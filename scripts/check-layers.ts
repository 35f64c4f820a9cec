import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * `npm run check:layers` (CI runs it): the imports between the top-level parts
 * of src/ must point one way, as docs/ARCHITECTURE.md draws them. Each part
 * (a folder, or a file at the root of src/) has a layer; a part may import
 * only parts of a lower layer, or of its own layer where LAYERS says so. Any
 * other import is named with its file and line, and the script fails.
 */

/** Lowest first. Parts in one row may not import each other unless listed in SAME_LAYER_EDGES. */
export const LAYERS: string[][] = [
  ['contract', 'errors', 'config', 'tracing'],
  ['logging', 'backends'],
  ['http'],
  ['events', 'history', 'auth', 'observability', 'redis', 'postgres'],
  ['graphql', 'rest', 'dashboard'],
  ['subscriptions'],
  ['app'],
  ['main'],
];

/** Imports allowed inside one layer (from → to). */
export const SAME_LAYER_EDGES: Array<[string, string]> = [
  // Account names in the configuration (API_KEYS entries, webhook secrets) are the contract's (contract/accounts.ts says what one may be).
  ['config', 'contract'],
  // Metrics count webhook outcomes by the route's own names for them.
  ['observability', 'events'],
  // The Redis adapters implement the event log's interface.
  ['redis', 'events'],
  // The history is a read model of published events; its Redis store lives with the other Redis adapters.
  ['history', 'events'],
  ['redis', 'history'],
  // The PostgreSQL history applies the history's own rules to the events' records.
  ['postgres', 'history'],
  ['postgres', 'events'],
];

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');

function filesUnder(dir: string): string[] {
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

export interface Violation {
  file: string;
  line: number;
  from: string;
  to: string;
}

const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

export function violations(files = filesUnder(SRC)): Violation[] {
  const layerOf = new Map(LAYERS.flatMap((row, index) => row.map((part) => [part, index] as const)));
  const sameLayer = new Set(SAME_LAYER_EDGES.map(([from, to]) => `${from}→${to}`));
  const found: Violation[] = [];
  for (const file of files) {
    const from = partOf(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(IMPORT)) {
      const to = partOf(resolve(dirname(file), match[1] ?? match[2] ?? ''));
      if (to === from) continue;
      const [a, b] = [layerOf.get(from), layerOf.get(to)];
      const allowed = a !== undefined && b !== undefined && (b < a || (a === b && sameLayer.has(`${from}→${to}`)));
      if (!allowed) found.push({ file: relative(SRC, file), line: text.slice(0, match.index + match[0].search(/\S/)).split('\n').length, from, to });
    }
  }
  return found;
}

const ROOT = resolve(SRC, '..');
/** Where the code is entered: the process, the dashboard's browser code, and the scripts, benchmarks and code generation that import sources. */
const ENTRY_DIRS = ['scripts', 'bench', 'web'];
const ENTRY_FILES = ['src/main.ts', 'codegen.ts'];

/** The relative imports of a file, resolved to the .ts files they name. */
const SIDE_EFFECT_IMPORT = /(?:^|\s)import\s+['"](\.{1,2}\/[^'"]+)['"]/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT), ...text.matchAll(SIDE_EFFECT_IMPORT)].map((match) => resolve(dirname(file), match[1] ?? match[2] ?? '').replace(/\.js$/, '.ts'));
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

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dead = unreached();
  const loose = looseRootFiles();
  for (const file of dead) process.stderr.write(`src/${file}: reached from nothing (main.ts, scripts/, bench/, codegen.ts)\n`);
  for (const file of loose) process.stderr.write(`src/${file}: at the root of src/, where only main.ts and errors.ts belong\n`);
  if (dead.length + loose.length > 0) process.exitCode = 1;
  const found = violations();
  for (const v of found) process.stderr.write(`src/${v.file}:${v.line}: ${v.from} imports ${v.to}, against the layering (docs/ARCHITECTURE.md)\n`);
  process.stdout.write(found.length === 0 ? 'check:layers: imports point one way\n' : `check:layers: ${found.length} import(s) against the layering\n`);
  process.exit(found.length === 0 && process.exitCode !== 1 ? 0 : 1);
}
