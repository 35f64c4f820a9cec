import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';

/*
 * A `.env` file in the working directory, read by the start command before
 * the configuration (Node's own parser, util.parseEnv: the syntax of
 * `--env-file`). It only fills in what the environment leaves unset, so a
 * deployment's own variables always win over a file left in the image.
 */

/** The `.env` read: sets in `env` what the file has and `env` does not; resolves how many the file held (undefined: no file). */
export function readDotEnv(env: NodeJS.ProcessEnv, path = '.env'): number | undefined {
  if (!existsSync(path)) return undefined;
  const values = parseEnv(readFileSync(path, 'utf8'));
  for (const [name, value] of Object.entries(values)) env[name] ??= value;
  return Object.keys(values).length;
}
