import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { ModeDefault, type AnySetting } from '../../src/config/kinds.js';
import { readSettings } from '../../src/config/read.js';
import { requirements } from '../../src/config/requirements.js';
import { fixed } from '../../src/config/fixed.js';
import { sections, spec, type VariableName } from '../../src/config/spec.js';

/* The configuration spec (src/config/spec.ts) against its parser, its docs and the code that reads the environment. */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const settings = Object.entries(spec) as [VariableName, AnySetting][];

/** What loadConfig throws for `env`, or undefined. */
function errorOf(env: Record<string, string>): Error | undefined {
  try {
    loadConfig(env);
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

describe.concurrent('the configuration spec', () => {
  it('gives every variable one line of documentation and lists it in exactly one section', () => {
    for (const [name, setting] of settings) {
      expect(setting.doc, name).toMatch(/\S/);
      expect(setting.doc, name).not.toContain('\n');
    }
    const listed = Object.values(sections).flatMap((section) => Object.keys(section));
    expect(listed.sort()).toEqual(Object.keys(spec).sort());
  });

  it('applies each default when the variable is unset, and leaves only the optional ones undefined', () => {
    const { values } = readSettings({});
    const optional = settings.filter(([, setting]) => setting.fallback === undefined).map(([name]) => name);
    expect(optional.sort()).toEqual([
      'API_KEYS_FILE',
      'DATABASE_URL',
      'JWT_ACCOUNT_CLAIM',
      'JWT_ISSUER',
      'JWT_JWKS_URL',
      'METRICS_PORT',
      'METRICS_TOKEN',
      'NODE_ENV',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'REDIS_SENTINEL_MASTER',
      'REDIS_URL',
      'UPSTREAM_API_KEY',
      'UPSTREAM_URL',
    ]);
    for (const [name, setting] of settings) {
      const fallback: unknown = setting.fallback;
      expect(values[name], name).toEqual(fallback instanceof ModeDefault ? fallback.otherwise : fallback);
    }
  });

  it('switches the production defaults with NODE_ENV=production', () => {
    const production = loadConfig({ NODE_ENV: 'production', API_KEYS: 'k', WEBHOOK_UNSIGNED: 'allow' });
    expect(production.limits).toMatchObject({ introspection: false, fieldSuggestions: false });
    expect(production.simulator.mode).toBe('off');
    expect(production.devApiKey).toBeUndefined();
    const development = loadConfig({});
    expect(development.limits).toMatchObject({ introspection: true, fieldSuggestions: true });
    expect(development.simulator.mode).toBe('auto');
  });

  it('rejects a value of the wrong kind for every variable that has a kind, in one line naming it', () => {
    const freeText = [
      'NODE_ENV',
      'HOST',
      'API_KEYS',
      'API_KEYS_FILE',
      'JWT_ISSUER',
      'JWT_AUDIENCE',
      'JWT_PERMISSIONS_CLAIM',
      'JWT_ACCOUNT_CLAIM',
      'PRODUCTS_FLAT',
      'PRODUCTS_PLANOGRAM',
      'UPSTREAM_API_KEY',
      'REDIS_PREFIX',
      'METRICS_TOKEN',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_SERVICE_NAME',
      'HISTORY_SOLD_STATUSES',
    ];
    for (const [name, setting] of settings) {
      const error = errorOf({ [name]: 'bogus value' });
      if (freeText.includes(name)) {
        expect(error, name).toBeUndefined();
        continue;
      }
      expect(error, name).toBeInstanceOf(ConfigError);
      expect(error?.message, name).toMatch(new RegExp(`^${name} must be `));
      expect(error?.message, name).toContain(setting.accepts);
      expect(error?.message, name).not.toContain('\n');
      // A secret, or what may hold one, is never repeated.
      if (setting.secret) expect(error?.message, name).not.toContain('bogus');
      else expect(error?.message, name).toContain('"bogus value"');
    }
  });

  it('reads a length of time with its unit (HISTORY_RETENTION)', () => {
    expect(loadConfig({}).history?.retentionMs).toBe(7 * 86_400_000);
    expect(loadConfig({ HISTORY_RETENTION: '36h' }).history?.retentionMs).toBe(36 * 3_600_000);
    expect(loadConfig({ HISTORY_RETENTION: '90s' }).history?.retentionMs).toBe(90_000);
    for (const bad of ['7', '7 d', '30s', '367d', '1w', '-1d']) {
      expect(errorOf({ HISTORY_RETENTION: bad })?.message, bad).toBe(
        `HISTORY_RETENTION must be a length of time from 1m to 366d, as a whole number and a unit (s, m, h, d), ` +
          `e.g. 7d, got ${JSON.stringify(bad)}`,
      );
    }
    expect(loadConfig({ HISTORY: 'off' }).history).toBeUndefined();
  });

  it('holds every whole number to its bounds', () => {
    const integers = settings.filter(([, setting]) => setting.accepts.startsWith('a whole number'));
    expect(integers.length).toBeGreaterThan(12);
    for (const [name, setting] of integers) {
      const [min, max] = [...setting.accepts.matchAll(/\d+/g)].map((match) => Number(match[0]));
      expect(errorOf({ [name]: String(min) }), name).toBeUndefined();
      expect(errorOf({ [name]: String(max) }), name).toBeUndefined();
      expect(errorOf({ [name]: String(max! + 1) })?.message, name).toBe(`${name} must be ${setting.accepts}, got "${max! + 1}"`);
      expect(errorOf({ [name]: '1.5' }), name).toBeInstanceOf(ConfigError);
      if (min! > 0) expect(errorOf({ [name]: String(min! - 1) }), name).toBeInstanceOf(ConfigError);
    }
  });

  it('derives what follows from a variable, with the values they had as variables at the defaults', () => {
    const MIB = 1_048_576;
    const defaults = loadConfig({});
    expect(defaults).toMatchObject({
      maxUnsentBytes: 4 * MIB,
      eventLogMaxBytes: 256 * MIB,
      websocket: { maxMessageBytes: 65_536 },
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
    });
    expect(loadConfig({ BACKEND: 'rest', UPSTREAM_URL: 'http://u', UPSTREAM_API_KEY: 'k' }).upstream).toMatchObject({
      maxConcurrent: 100,
      maxQueued: 1_000,
      retries: 2,
      connections: 50,
    });
    expect(
      loadConfig({ BACKEND: 'rest', UPSTREAM_URL: 'http://u', UPSTREAM_API_KEY: 'k', UPSTREAM_MAX_CONCURRENT: '7' }).upstream,
    ).toMatchObject({ maxConcurrent: 7, maxQueued: 70, connections: 4 });
    // A WebSocket message is at most a request body; what a slow client may leave unread, a few of them.
    expect(loadConfig({ MAX_BODY_BYTES: '2048' })).toMatchObject({ maxUnsentBytes: 65_536, websocket: { maxMessageBytes: 2_048 } });
    expect(loadConfig({ MAX_BODY_BYTES: String(2 * MIB) })).toMatchObject({
      maxUnsentBytes: 8 * MIB,
      websocket: { maxMessageBytes: 65_536 },
    });
    expect(loadConfig({ EVENT_LOG_SIZE: '10' }).eventLogMaxBytes).toBe(Math.ceil(0.64 * MIB));
  });

  it('states each requirement in the error of the variable it names', () => {
    for (const requirement of requirements) expect(Object.hasOwn(spec, requirement.variable)).toBe(true);
    expect(errorOf({ BACKEND: 'rest' })?.message).toBe('UPSTREAM_URL must be set when BACKEND=rest');
    expect(errorOf({ NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow' })?.message).toMatch(
      /^API_KEYS must be set when NODE_ENV=production/,
    );
    // Forward mode: the upstream judges client keys, so none are needed.
    expect(errorOf({ NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow', BACKEND: 'rest', UPSTREAM_URL: 'http://u' })).toBeUndefined();
  });
});

/** Every TypeScript file under src/, relative to the root. */
const sources = (readdirSync(`${ROOT}src`, { recursive: true }) as string[])
  .filter((file) => file.endsWith('.ts'))
  .map((file) => `src/${file}`);
/** A source without its comments, which may well mention process.env. */
const code = (file: string) =>
  readFileSync(`${ROOT}${file}`, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:])\/\/.*$/gm, '$1');

describe('the environment read in src/', () => {
  it('is read whole in main.ts only, and handed to loadConfig', () => {
    const reading = sources.filter((file) => code(file).includes('process.env'));
    expect(reading).toEqual(['src/main.ts']);
    expect(readFileSync(`${ROOT}src/main.ts`, 'utf8')).toMatch(/loadConfig\(process\.env\)/);
  });

  it('names no variable the spec does not declare', () => {
    const named = new Set<string>();
    for (const file of sources) {
      // Variables are upper case: `.env.example`, a file named in the start command's help, is no variable.
      for (const match of code(file).matchAll(/\benv(?:\.|\[\s*['"`])([A-Z_][A-Z0-9_]*)\b/g)) named.add(match[1]!);
    }
    expect([...named].filter((name) => !Object.hasOwn(spec, name))).toEqual([]);
  });

  it('matches the README table, one row per variable', () => {
    const readme = readFileSync(`${ROOT}README.md`, 'utf8');
    const table = readme.slice(readme.indexOf('<!-- config:start'), readme.indexOf('<!-- config:end -->'));
    const rows = [...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1]);
    expect(rows).toEqual(Object.keys(spec));
  });
});

/** Every number and string of a spec default or a fixed value, as written in code (`1_000`, `64 * 1_024`) once evaluated. */
function configuredValues(): Set<number | string> {
  const values = new Set<number | string>();
  const add = (value: unknown): void => {
    if (value instanceof ModeDefault) return add([value.production, value.otherwise]);
    if (Array.isArray(value)) return value.forEach(add);
    if (value !== null && typeof value === 'object') return Object.values(value).forEach(add);
    if (typeof value === 'number' || typeof value === 'string') values.add(value);
  };
  for (const [, setting] of settings) add(setting.fallback);
  add(fixed);
  return values;
}

/** A literal of the kinds a default is written in: a number, a product of numbers, a quoted string. */
const LITERAL = String.raw`(\d[\d_]*(?:\.\d+)?(?:\s*\*\s*\d[\d_]*)*|'[^'\n]*')`;
const valueOf = (literal: string): number | string =>
  literal.startsWith("'")
    ? literal.slice(1, -1)
    : literal.split('*').reduce((product, factor) => product * Number(factor.trim().replaceAll('_', '')), 1);

/**
 * A module's own fallbacks (`options.x ?? 1_000`, `{ x = 1_000 }`, `@default 1000`) equal to a
 * configured value, as `file name=value`. Each is either a setting written twice (the option
 * should be required and fed from Config) or a coincidence, listed below with what it is.
 */
function fallbacksEqualToConfiguredValues(): string[] {
  const configured = configuredValues();
  // Below ten a number says nothing (`?? 0`, `?? 1`), and a word of three letters neither.
  const telling = (value: number | string) => (typeof value === 'number' ? value >= 10 : value.length >= 4) && configured.has(value);
  const found: string[] = [];
  for (const file of sources.filter((file) => !file.startsWith('src/config/'))) {
    const patterns = [
      new RegExp(String.raw`(\w+)\s*\?\?\s*${LITERAL}`, 'g'),
      new RegExp(String.raw`[{,(]\s*(\w+)\s*=\s*${LITERAL}\s*(?=[,})])`, 'g'),
    ];
    for (const pattern of patterns)
      for (const [, name, literal] of code(file).matchAll(pattern))
        if (telling(valueOf(literal!))) found.push(`${file} ${name}=${valueOf(literal!)}`);
    // An object as the fallback: `options.values ?? { flat: 'flat' }`.
    for (const [, name, fields] of code(file).matchAll(/(\w+)\s*\?\?\s*\{([^{}]*)\}/g)) {
      for (const [, field, literal] of fields!.matchAll(new RegExp(String.raw`(\w+)\s*:\s*${LITERAL}`, 'g')))
        if (telling(valueOf(literal!))) found.push(`${file} ${name}.${field}=${valueOf(literal!)}`);
    }
    const documented = new RegExp(String.raw`@default\s+${LITERAL}[^\n]*\n(?:\s*\*\/\s*\n)?\s*(?:readonly\s+)?(\w+)\??:`, 'g');
    for (const [, literal, name] of readFileSync(`${ROOT}${file}`, 'utf8').matchAll(documented))
      if (telling(valueOf(literal!))) found.push(`${file} ${name}=${valueOf(literal!)}`);
  }
  return [...new Set(found)].sort();
}

describe('each default', () => {
  it('is written once: in spec.ts or fixed.ts, not again as a fallback in the module that uses it', () => {
    // No setting of the configuration, whatever number they happen to share with one.
    const coincidences = [
      // Bounds of the gateway's own memories and caches.
      'src/auth/account-access.ts maxAccounts=1000',
      'src/auth/account-access.ts maxEntries=10000',
      'src/auth/upstream-key-check.ts maxEntries=10000',
      'src/backends/caching-backend.ts maxEntries=10000',
      // How often one kind of contract drift may be logged (once a minute); a test passes its own clock.
      'src/backends/rest/drift-report.ts everyMs=60000',
      'src/events/event-bus.ts maxQueuedPerSubscriber=10000',
      'src/events/event-log.ts maxAccounts=10000',
      'src/events/event-transactions.ts maxEntries=10000',
      // How long an event's transaction read is kept: a minute, as the PostgreSQL history's sweep period is.
      'src/events/event-transactions.ts ttlMs=60000',
      'src/events/recent-events.ts maxEntries=100000',
      'src/graphql/response-cache.ts maxEntries=1000',
      'src/graphql/response-cache.ts maxResultBytes=65536',
      // A pause for an editor's several writes of one save, and the first retry's backoff.
      'src/auth/key-store.ts debounceMs=100',
      'src/backends/rest/upstream-client.ts retryBaseMs=50',
      // A GraphQL argument's default page.
      'src/graphql/types/transaction-stats.ts first=10',
    ];
    expect(fallbacksEqualToConfiguredValues()).toEqual(coincidences.sort());
  });
});
