import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { spec } from '../../src/config/spec.js';
import { REPO_ROOT } from './children.js';

/** The fast paths a variant may switch, by their bench name. */
export type Switch = 'coalesce' | 'sharing' | 'graphqlFastPath' | 'compiledExecution' | 'responseCache' | 'plans';

export interface Build {
  /** Row label: `after`, or `before (<short commit>)`. */
  label: string;
  /** The checkout, ending in `/`. */
  root: string;
  /** Short commit of a baseline; absent for the working tree. */
  revision?: string;
  /** Entry module of a gateway child, relative to `root`. */
  entry: string;
  /** How each switch reaches this revision's gateway: a flag of its entry, or a configuration variable. */
  switches: Partial<Record<Switch, { flag: string } | { variable: string }>>;
  /** Every configuration variable this revision reads: unset in its children, so the shell cannot change a variant. */
  variables: string[];
}

/** Flags of bench/lib/gateway-main.ts (a120032 on), then the variables revisions before it read. */
const FLAGS: Record<Switch, string> = {
  coalesce: 'coalesce',
  sharing: 'sharing',
  graphqlFastPath: 'graphql-fast-path',
  compiledExecution: 'compiled-execution',
  responseCache: 'response-cache',
  plans: 'plans',
};
// Switches that came as flags only (compiled execution, the response cache) have no variable.
const VARIABLES: Partial<Record<Switch, string>> = {
  coalesce: 'UPSTREAM_COALESCE',
  sharing: 'SUBSCRIPTION_SHARING',
  graphqlFastPath: 'DIRECT_LANE',
};

/** The configuration variables a checkout declares: its spec (0b6903a on), else every upper-case name in its config sources. */
async function variablesOf(root: string): Promise<string[]> {
  const specFile = `${root}src/config/spec.ts`;
  if (existsSync(specFile)) {
    const module = (await import(pathToFileURL(specFile).href)) as { spec?: Record<string, unknown> };
    if (module.spec) return Object.keys(module.spec);
  }
  const sources = [
    `${root}src/config.ts`,
    ...(existsSync(`${root}src/config`) ? readdirSync(`${root}src/config`).map((f) => `${root}src/config/${f}`) : []),
  ];
  const names = new Set<string>(['NODE_ENV', 'PORT', 'HOST']);
  for (const file of sources.filter((f) => existsSync(f) && f.endsWith('.ts'))) {
    for (const match of readFileSync(file, 'utf8').matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\bBACKEND\b/g)) names.add(match[0]);
  }
  return [...names];
}

export async function describeBuild(root: string, label: string, revision?: string): Promise<Build> {
  const variables = root === REPO_ROOT ? Object.keys(spec) : await variablesOf(root);
  const main = `${root}bench/lib/gateway-main.ts`;
  const mainText = existsSync(main) ? readFileSync(main, 'utf8') : undefined;
  const switches: Build['switches'] = {};
  for (const name of Object.keys(FLAGS) as Switch[]) {
    const flag = FLAGS[name];
    // The entry's parseArgs options name each flag it accepts (`coalesce: {` or `'graphql-fast-path': {`).
    if (mainText && new RegExp(`['"]?${flag}['"]?\\s*:\\s*\\{\\s*type`).test(mainText)) switches[name] = { flag };
    else if (VARIABLES[name] && variables.includes(VARIABLES[name])) switches[name] = { variable: VARIABLES[name] };
  }
  return { label, root, revision, entry: mainText ? 'bench/lib/gateway-main.ts' : 'src/main.ts', switches, variables };
}

/** The working tree: what `npm run bench` measures when no baseline is asked for. */
export const CURRENT: Build = await describeBuild(REPO_ROOT, 'after');
