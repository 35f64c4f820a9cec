import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export interface GeneratedFile {
  /** Relative to the repository root. */
  filename: string;
  content: string;
}

/** Names the files under `root` whose content differs from what was generated; writes them unless `check`. */
export function syncGeneratedFiles(root: string, files: readonly GeneratedFile[], check: boolean): string[] {
  const stale: string[] = [];
  for (const { filename, content } of files) {
    const path = resolve(root, filename);
    let current: string | undefined;
    try {
      current = readFileSync(path, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === content) continue;
    stale.push(filename);
    if (!check) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
    }
  }
  return stale;
}
