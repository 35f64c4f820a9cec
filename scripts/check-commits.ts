import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * `npm run check:commits` (CI runs it): every commit since the rule was taken
 * up says what it does in a subject of at most 72 characters, with the rest
 * in a body after a blank line, as `git log --oneline`, GitHub and the model
 * codebases show them. Commits before RULE_FROM are as they were written.
 */

/** The last commit before the rule; the ones after it are checked. */
const RULE_FROM = '54f16bc';
export const MAX_SUBJECT = 72;

/** What is wrong with a commit message, or undefined. */
export function messageProblem(message: string): string | undefined {
  const [subject = '', second] = message.split('\n');
  if (subject.trim() === '') return 'an empty subject';
  if (subject.length > MAX_SUBJECT) return `a subject of ${subject.length} characters (at most ${MAX_SUBJECT})`;
  if (second !== undefined && second.trim() !== '') return 'no blank line between the subject and the body';
  return undefined;
}

function git(...args: string[]): string {
  return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let log: string;
  try {
    log = git('log', '--format=%h%x00%B%x01', `${RULE_FROM}..HEAD`);
  } catch {
    // A copy without its history (an exported tarball), or without the rule's first commit: nothing to check.
    process.stdout.write(`check:commits: no history since ${RULE_FROM} here; nothing checked\n`);
    process.exit(0);
  }
  const findings = log
    .split('\u0001')
    .map((entry) => entry.replace(/^\n/, ''))
    .filter((entry) => entry.includes('\u0000'))
    .flatMap((entry) => {
      const [hash, message] = entry.split('\u0000') as [string, string];
      const problem = messageProblem(message);
      return problem ? [`${hash}: ${problem}: ${message.split('\n')[0]}`] : [];
    });
  for (const finding of findings) process.stderr.write(`${finding}\n`);
  process.stdout.write(findings.length === 0 ? 'check:commits: every subject holds\n' : `check:commits: ${findings.length} finding(s)\n`);
  process.exit(findings.length === 0 ? 0 : 1);
}
