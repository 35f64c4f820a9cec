import { ConfigError, ModeDefault, REJECTED, Rejected, UNSET, type AnySetting, type Env } from './kinds.js';
import { requirements } from './requirements.js';
import { retired, spec, type Values, type VariableName } from './spec.js';

/** The variables' values, defaults applied, and which of them the environment set. */
export interface ReadSettings {
  values: Values;
  given: ReadonlySet<VariableName>;
  /** Retired variables the environment still sets, each with what holds instead (said at start). */
  retiredGiven: Array<{ name: string; instead: string }>;
}

/**
 * Reads every variable of the spec from `env`, the only place the environment
 * is read. Throws a ConfigError at the first value a variable does not accept,
 * then at the first requirement (requirements.ts) not met.
 */
export function readSettings(env: Env): ReadSettings {
  const read = new Map<VariableName, unknown>();
  for (const [name, setting] of Object.entries(spec) as [VariableName, AnySetting][]) {
    const raw = env[name]?.trim();
    if (raw === undefined || (raw === '' && !setting.emptyIsValue)) continue;
    const value: unknown = setting.read(raw);
    if (value === REJECTED || value instanceof Rejected) {
      throw new ConfigError(name, setting.accepts, setting.secret ? undefined : raw, value instanceof Rejected ? value.problem : undefined);
    }
    if (value !== UNSET) read.set(name, value);
  }
  const production = read.get('NODE_ENV') === 'production';
  const values = Object.fromEntries(
    Object.entries(spec).map(([name, setting]) => {
      const fallback: unknown = setting.fallback;
      const byDefault = fallback instanceof ModeDefault ? (production ? fallback.production : fallback.otherwise) : fallback;
      return [name, read.has(name as VariableName) ? read.get(name as VariableName) : byDefault];
    }),
  ) as Values;
  const given: ReadonlySet<VariableName> = new Set(read.keys());
  const unmet = requirements.find((requirement) => requirement.missing(values, given));
  if (unmet) throw new ConfigError(unmet.variable, `${unmet.unset ? 'unset' : 'set'} ${unmet.when}`, undefined);
  const retiredGiven = Object.entries(retired)
    .filter(([name]) => env[name] !== undefined)
    .map(([name, instead]) => ({ name, instead }));
  return { values, given, retiredGiven };
}
