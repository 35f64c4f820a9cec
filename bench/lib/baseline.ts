import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describeBuild, type Build } from './builds.js';
import { REPO_ROOT } from './children.js';

const run = promisify(execFile);

export interface Baseline extends Build {
  revision: string;
  /** The revision's subject line, for the results header. */
  subject: string;
  /** Removes the worktree and its folder; safe to call twice and from an exit handler (synchronous). */
  remove(): void;
}

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
      try {
        git('worktree', 'prune');
      } catch {
        // nothing more to do
      }
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
    const build = await describeBuild(`${tree}/`, `before (${short})`, short);
    log(
      `baseline ${short}: gateways start from ${build.entry}; switches ${Object.entries(build.switches)
        .map(([k, v]) => `${k} by ${'flag' in v ? `--${v.flag}` : v.variable}`)
        .join(', ')}`,
    );
    return { ...build, revision: short, subject: git('log', '-1', '--format=%s', commit), remove };
  } catch (error) {
    remove();
    throw error;
  }
}
