import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { spec } from '../../src/config/spec.js';
import { REPO_ROOT } from './children.js';

/** A checkout the bench starts gateways from: the working tree ("after") or a baseline revision ("before"). */
export interface Build {
  label: string;
  /** The checkout, ending in `/`. */
  root: string;
  /** Short commit of a baseline; absent for the working tree. */
  revision?: string;
  /** Every configuration variable this checkout reads: unset in its children, so the shell cannot change a variant. */
  variables: string[];
}

export interface Baseline extends Build {
  revision: string;
  subject: string;
  /** Removes the worktree and its folder; safe to call twice and from an exit handler (synchronous). */
  remove(): void;
}

export const CURRENT: Build = { label: 'after', root: REPO_ROOT, variables: Object.keys(spec) };

const run = promisify(execFile);
const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();

export async function prepareBaseline(revision: string, log: (message: string) => void): Promise<Baseline> {
  const commit = git('rev-parse', '--verify', `${revision}^{commit}`);
  const short = git('rev-parse', '--short', commit);
  const folder = mkdtempSync(path.join(os.tmpdir(), `vending-gateway-baseline-${short}-`));
  const tree = path.join(folder, 'tree');
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    try {
      git('worktree', 'remove', '--force', tree);
    } catch {
      // Not added, or already gone: prune drops what git still lists.
      git('worktree', 'prune');
    }
    rmSync(folder, { recursive: true, force: true });
  };
  // Also if the bench is stopped while this is still being set up.
  process.once('exit', remove);
  try {
    log(`baseline ${short}: git worktree add --detach ${tree}`);
    git('worktree', 'add', '--detach', tree, commit);
    log(`baseline ${short}: npm ci (its own dependencies)`);
    await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: tree, maxBuffer: 64 * 2 ** 20 });
    const its = (await import(pathToFileURL(`${tree}/src/config/spec.ts`).href)) as { spec: Record<string, unknown> };
    const label = `before (${short})`;
    return {
      label,
      root: `${tree}/`,
      revision: short,
      variables: Object.keys(its.spec),
      subject: git('log', '-1', '--format=%s', commit),
      remove,
    };
  } catch (error) {
    remove();
    throw error;
  }
}
