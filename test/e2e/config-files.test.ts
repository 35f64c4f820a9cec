import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { configFiles } from '../../scripts/config-files.js';

/*
 * README.md's configuration table and .env.example are generated from the spec;
 * `npm run config:check` (and codegen:check, which CI runs) fails naming a stale one.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const copies: string[] = [];
afterAll(() => copies.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A scratch copy of the two generated files, changed by `edit`. */
function copyWith(edit: (files: { readme: string; env: string }) => { readme: string; env: string }): string {
  const dir = mkdtempSync(join(tmpdir(), 'config-check-'));
  copies.push(dir);
  const { readme, env } = edit({
    readme: readFileSync(join(ROOT, 'README.md'), 'utf8'),
    env: readFileSync(join(ROOT, '.env.example'), 'utf8'),
  });
  writeFileSync(join(dir, 'README.md'), readme);
  writeFileSync(join(dir, '.env.example'), env);
  return dir;
}

/** Runs `npm run config:check` (scripts/config.ts --check) on the copy in `dir`. */
function check(dir: string) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/config.ts', '--check', '--root', dir], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { status: run.status, stderr: run.stderr };
}

describe.concurrent('config:check', () => {
  it('finds the committed README table and .env.example up to date', () => {
    for (const { filename, content } of configFiles(ROOT)) expect(readFileSync(join(ROOT, filename), 'utf8'), filename).toBe(content);
  });

  it('passes on an unchanged copy', () => {
    expect(check(copyWith((files) => files))).toEqual({ status: 0, stderr: '' });
  });

  it('fails naming README.md when a default in its table is stale', () => {
    const dir = copyWith(({ readme, env }) => ({ readme: readme.replace('| `PORT` | `4000` |', '| `PORT` | `8080` |'), env }));
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toContain('`8080`');
    expect(check(dir)).toEqual({ status: 1, stderr: 'config:check: README.md is out of date; run npm run config\n' });
  });

  it('fails naming README.md when its table lacks a variable, and leaves the file as it was', () => {
    const dir = copyWith(({ readme, env }) => ({ readme: readme.replace(/^\| `CACHE_TTL_MS` .*\n/m, ''), env }));
    const before = readFileSync(join(dir, 'README.md'), 'utf8');
    expect(check(dir).stderr).toBe('config:check: README.md is out of date; run npm run config\n');
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe(before);
  });

  it('fails naming .env.example when it lacks a variable', () => {
    const dir = copyWith(({ readme, env }) => ({ readme, env: env.replace('# REDIS_PREFIX=vending-gateway:\n', '') }));
    expect(check(dir)).toEqual({ status: 1, stderr: 'config:check: .env.example is out of date; run npm run config\n' });
  });

  it('fails in one line when the README lost its table markers', () => {
    const dir = copyWith(({ readme, env }) => ({ readme: readme.replace('<!-- config:end -->', ''), env }));
    const { status, stderr } = check(dir);
    expect(status).toBe(1);
    expect(stderr).toMatch(/^config:check: README\.md has no configuration table markers .*\n$/);
  });

  it('rewrites a stale copy without --check, after which the check passes', () => {
    const dir = copyWith(({ readme }) => ({ readme: readme.replace('| `PORT` | `4000` |', '| `PORT` | `8080` |'), env: '' }));
    const write = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/config.ts', '--root', dir], { cwd: ROOT, encoding: 'utf8' });
    expect(write.stdout).toBe('config: wrote README.md, .env.example\n');
    expect(check(dir)).toEqual({ status: 0, stderr: '' });
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  });
});
