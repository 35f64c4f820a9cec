import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * Documents and comments say the rule itself, in words that stand on their
 * own. A reader of this repository has no design document or issue tracker
 * to look things up in, so a citation of one ("see section 5 of the design",
 * "issue 17", "#17") is a sentence they cannot follow. This test scans the
 * text files a reader meets and names each such citation by file and line.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCANNED = ['README.md', 'docs', 'bench', 'src', 'scripts', 'test', 'web'];
const TEXT = /\.(md|ts|js|mjs|json|graphql|ya?ml|html|css)$/;
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', '.git']);
/** This file names the patterns it looks for. */
const SELF = 'test/unit/no-outside-citations.test.ts';

interface Rule {
  why: string;
  /** True when the line (inline code removed) holds the citation. */
  finds: (line: string, file: string) => boolean;
}

const RULES: Rule[] = [
  {
    // A section sign cites a section of some document. Standards are public
    // and stay allowed when named: "RFC 9110 §8.4".
    why: 'a section (§) of a document outside the repository',
    finds: (line) => line.replace(/\bRFC \d+ §/g, '').includes('§'),
  },
  {
    why: 'an issue number',
    finds: (line) => /\bissues? #?\d+/i.test(line),
  },
  {
    // "#17" in prose. Not in stylesheets and pages, where "#333" is a colour;
    // not inside `code`, where "#1" may be anything.
    why: 'an issue or pull request number (#N)',
    finds: (line, file) => !/\.(css|html)$/.test(file) && /(^|[\s(,;])#\d+\b/.test(line),
  },
  {
    why: 'the design document',
    finds: (line) => /\bDESIGN\b/.test(line),
  },
];

function filesUnder(path: string): string[] {
  const full = join(ROOT, path);
  if (!statSync(full, { throwIfNoEntry: false })) return [];
  if (statSync(full).isFile()) return TEXT.test(path) ? [path] : [];
  return readdirSync(full)
    .filter((name) => !SKIPPED_FOLDERS.has(name))
    .flatMap((name) => filesUnder(relative(ROOT, join(full, name))));
}

function citations(): string[] {
  const found: string[] = [];
  for (const file of SCANNED.flatMap(filesUnder)) {
    if (file === SELF) continue;
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        const prose = line.replace(/`[^`]*`/g, '');
        for (const rule of RULES)
          if (rule.finds(prose, file)) found.push(`${file}:${index + 1}: ${rule.why}: ${line.trim().slice(0, 100)}`);
      });
  }
  return found;
}

describe('documents and comments', () => {
  it('cite nothing outside the repository', () => {
    expect(citations()).toEqual([]);
  });

  it('are scanned: the rules find what they are for, and let colours and standards be', () => {
    const hits = (line: string, file = 'x.ts') => RULES.filter((rule) => rule.finds(line, file)).length;
    expect(hits('as the design asks (DESIGN §5)')).toBe(2);
    expect(hits('asked in issue 17 point 2')).toBe(1);
    expect(hits('fixed in Issues 15')).toBe(1);
    expect(hits('see (#19)')).toBe(1);
    expect(hits('decoded as RFC 9110 §8.4 says')).toBe(0);
    expect(hits('color: #333;', 'web/styles.css')).toBe(0);
    expect(hits('a list #1 and `#2`'.replace(/`[^`]*`/g, ''))).toBe(1);
    expect(filesUnder('docs').length).toBeGreaterThan(3);
    expect(filesUnder('src').length).toBeGreaterThan(50);
  });
});
