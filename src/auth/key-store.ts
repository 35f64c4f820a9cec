import { watch as watchDirectory, readFileSync, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { hash } from 'node:crypto';
import type { Identity } from '../backends/backend.js';
import { parseKeyFile, type KeyEntry } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { keyIdentity } from './permissions.js';

/*
 * The API keys a gateway accepts: API_KEYS's, fixed at start, and
 * API_KEYS_FILE's, re-read when the file changes and on SIGHUP. The
 * directory is watched, not the file: editors and config management write a
 * new file and rename it over the old one, which a watch on the file itself
 * would lose, and a Kubernetes volume swaps a symlinked folder; events of
 * the file or of such a swap have it read again (those of other files in the
 * directory do not), and it counts as changed only when its text did. A file that cannot be read or has a bad line is
 * refused whole (logged by line number, never by key) and the keys in use
 * stay.
 *
 * Keys are held as SHA-256 digests and looked up by digest: the time a lookup
 * takes depends on a digest, which a client cannot steer towards a real
 * key's byte by byte.
 */

export interface KeyStoreOptions {
  /** API_KEYS's entries. */
  entries: readonly KeyEntry[];
  /** API_KEYS_FILE. */
  file?: string | undefined;
  logger: Logger;
  /** Changes to the file are read once they stop for this long (an editor's save is several events). @default 100 */
  debounceMs?: number;
}

export interface KeyStore {
  /** The identity of a presented key, or undefined when it is not one of ours. */
  lookup(key: string): Identity | undefined;
  /** Re-reads the file (SIGHUP, or the file changed); a file that cannot be used keeps the keys in use. */
  reload(): void;
  /**
   * Calls `listener` after each reload with the key's identity then (other permissions, perhaps), or undefined once the key
   * is gone; returns the function that ends the watch.
   */
  watch(key: string, listener: (identity: Identity | undefined) => void): () => void;
  close(): void;
}

const digest = (key: string): string => hash('sha256', key, 'base64');

function entriesOf(path: string, text: string): KeyEntry[] {
  const { entries, problems } = parseKeyFile(text);
  if (problems.length > 0) throw new Error(`API_KEYS_FILE ${path}: ${problems.join('; ')}`);
  return entries;
}

function byDigest(entries: readonly KeyEntry[]): Map<string, Identity> {
  const map = new Map<string, Identity>();
  // A key listed twice keeps the permissions and account of its last entry, as a later line overrides an earlier one.
  for (const { key, permissions, account } of entries) map.set(digest(key), keyIdentity(key, permissions, account));
  return map;
}

/** Longest a change to the key file waits for the events after it to stop. */
const MAX_WAIT_MS = 1_000;

/**
 * Whether a change in the key file's directory may be one of the file: its
 * own name, a Kubernetes volume swapping its `..data` folder (the file is a
 * symlink into it), or a platform that does not say which file changed.
 */
const concernsKeyFile = (changed: string | Buffer | null, name: string): boolean =>
  changed === null || String(changed) === name || String(changed).startsWith('..');

/** Reads the file at once: a gateway started with a file it cannot use throws (the caller reports it). */
export function createKeyStore(options: KeyStoreOptions): KeyStore {
  const { logger, debounceMs = 100 } = options;
  const file = options.file === undefined ? undefined : resolve(options.file);
  let text = file ? readFileSync(file, 'utf8') : '';
  let keys = byDigest([...options.entries, ...(file ? entriesOf(file, text) : [])]);
  const watchers = new Map<string, Set<(identity: Identity | undefined) => void>>();

  /** `always`: SIGHUP, which re-reads even a file whose text has not changed. */
  function reload(always: boolean): void {
    if (!file) return;
    let entries: KeyEntry[];
    try {
      const read = readFileSync(file, 'utf8');
      if (read === text && !always) return;
      text = read;
      entries = entriesOf(file, read);
    } catch (error) {
      logger.error({ err: { message: (error as Error).message } }, 'API_KEYS_FILE could not be read: the keys in use stay');
      return;
    }
    keys = byDigest([...options.entries, ...entries]);
    logger.info({ keys: keys.size }, 'API keys re-read');
    for (const [hashed, listeners] of watchers) {
      const identity = keys.get(hashed);
      for (const listener of [...listeners]) listener(identity);
    }
  }

  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let burstStarted = 0;
  if (file) {
    const name = basename(file);
    watcher = watchDirectory(dirname(file), (_event, changed) => {
      // Other files of the directory (a log beside the keys) are not the keys: only their own changes count.
      if (!concernsKeyFile(changed, name)) return;
      clearTimeout(timer);
      const now = Date.now();
      if (timer === undefined) burstStarted = now;
      // A save is several events; a burst that does not stop is still read within MAX_WAIT_MS of its start.
      const wait = Math.max(0, Math.min(debounceMs, burstStarted + MAX_WAIT_MS - now));
      timer = setTimeout(() => {
        timer = undefined;
        reload(false);
      }, wait);
      timer.unref();
    });
    watcher.on('error', (error) => logger.error({ err: error }, 'API_KEYS_FILE is no longer watched: send SIGHUP after changing it'));
    watcher.unref();
  }

  return {
    lookup: (key) => keys.get(digest(key)),
    reload: () => reload(true),
    watch(key, listener) {
      const hashed = digest(key);
      const listeners = watchers.get(hashed) ?? new Set();
      watchers.set(hashed, listeners);
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && watchers.get(hashed) === listeners) watchers.delete(hashed);
      };
    },
    close() {
      clearTimeout(timer);
      watcher?.close();
      watchers.clear();
    },
  };
}
