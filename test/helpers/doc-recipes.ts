import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { transform } from 'esbuild';

/*
 * The TypeScript recipes of a guide in docs/, run as written: blocks taken
 * from the guide, pointed at a test's gateway, transpiled and run by this
 * Node in a process of their own (so a recipe that needs what this Node
 * lacks fails here as it would for a user). The only addition: after each
 * line where a recipe records a result (`after = …`), a report of that
 * result on stdout, under the recipe's label.
 */

const ROOT = new URL('../../', import.meta.url);
/** The line each recipe of docs/subscriptions.md records a result with. */
export const RECORD_LINE = 'after = result.data?.transactionUpdated.eventId ?? after;';

/** The first ```ts block after `heading` in the guide `path` (relative to the repository). */
export function docBlockAfter(path: string, heading: string): string {
  const guide = readFileSync(new URL(path, ROOT), 'utf8');
  const at = guide.indexOf(heading);
  if (at < 0) throw new Error(`${path} has no ${JSON.stringify(heading)}`);
  const block = /```ts\n([\s\S]*?)```/.exec(guide.slice(at))?.[1];
  if (block === undefined) throw new Error(`${path} has no ts block after ${JSON.stringify(heading)}`);
  return block;
}

/** `block` with a report of each result it records, under `label`. */
export function reporting(block: string, label: string): string {
  if (!block.includes(RECORD_LINE)) throw new Error(`the ${label} recipe records no result with ${RECORD_LINE}`);
  return block.replaceAll(RECORD_LINE, `${RECORD_LINE} report(${JSON.stringify(label)}, result);`);
}

export interface RecipeReport {
  label: string;
  result: { data?: { transactionUpdated?: { eventId: string; status: string } | null } | null; error?: unknown; errors?: unknown };
}

export interface RecipeProcess {
  /** Every result reported so far, in order. */
  reports: RecipeReport[];
  /** What the process wrote on stderr. */
  stderr(): string;
  /** Its exit code once it exited (null: killed), else undefined. */
  exited(): number | null | undefined;
  /** Kills it and removes its file. */
  stop(): void;
}

/**
 * Runs `blocks` (recipes, in order) as one program with `key` defined and the
 * guide's `http://localhost:4000` (and `ws://…`) replaced by `httpUrl`.
 */
export async function runRecipes(blocks: string[], httpUrl: string, key: string): Promise<RecipeProcess> {
  const program = [
    `const key = ${JSON.stringify(key)};`,
    'const report = (label: string, result: unknown) => console.log(JSON.stringify({ label, result }));',
    ...blocks,
  ]
    .join('\n')
    .replaceAll('ws://localhost:4000', httpUrl.replace(/^http/, 'ws'))
    .replaceAll('http://localhost:4000', httpUrl);
  const { code } = await transform(program, { loader: 'ts', format: 'esm' });
  // Under node_modules/, so the recipe's imports resolve to the repository's packages.
  const dir = new URL(`node_modules/.cache/doc-recipes-${randomUUID()}/`, ROOT);
  mkdirSync(dir, { recursive: true });
  const file = new URL('recipes.mjs', dir);
  writeFileSync(file, code);

  const reports: RecipeReport[] = [];
  let stderr = '';
  let exited: number | null | undefined;
  const child = spawn(process.execPath, [file.pathname], { stdio: ['ignore', 'pipe', 'pipe'] });
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('{"label"')) reports.push(JSON.parse(line) as RecipeReport);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.on('exit', (code) => (exited = code));
  return {
    reports,
    stderr: () => stderr,
    exited: () => exited,
    stop() {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The type errors of `blocks` as one strict TypeScript module (with `key` declared), as a user's project with the
 * packages installed would report them; none when they compile.
 */
export async function typeErrorsOf(blocks: string[]): Promise<string[]> {
  const ts = (await import('typescript')).default;
  const dir = new URL(`node_modules/.cache/doc-recipes-${randomUUID()}/`, ROOT);
  mkdirSync(dir, { recursive: true });
  const file = new URL('recipes.ts', dir).pathname;
  writeFileSync(file, ['declare const key: string;', ...blocks, 'export {};'].join('\n'));
  try {
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
    });
    return ts.getPreEmitDiagnostics(program).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
