/*
 * The kinds of value a variable can hold. Each kind says what it accepts (the
 * same words in the one-line error and in the generated docs), reads a raw
 * value, and writes a value back the way it is set in the environment.
 */

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  /** `problem`: what is wrong with the value, in words that never repeat it (a secret's setting has its own). */
  constructor(variable: string, accepts: string, got: string | undefined, problem?: string) {
    super(
      `${variable} must be ${accepts}` +
        `${got === undefined ? '' : `, got ${JSON.stringify(got)}`}${problem === undefined ? '' : `; ${problem}`}`,
    );
    this.name = 'ConfigError';
  }
}

/** What `read` answers for a value the setting does not accept. */
export const REJECTED: unique symbol = Symbol('rejected');
/** What `read` answers for a value the setting does not accept when it can say why; `problem` quotes none of the value. */
export class Rejected {
  constructor(readonly problem: string) {}
}
/** What `read` answers for a value that says nothing (a list of no items): the default applies. */
export const UNSET: unique symbol = Symbol('unset');

/** A default that differs when NODE_ENV=production. */
export class ModeDefault<T> {
  constructor(
    readonly production: T,
    readonly otherwise: T,
  ) {}
}

/** `inProduction('off', 'auto')`: `off` when NODE_ENV=production, `auto` otherwise. */
export const inProduction = <T>(production: T, otherwise: T): ModeDefault<T> => new ModeDefault(production, otherwise);

type Present<V> = Exclude<V, undefined>;

export interface Setting<V> {
  /** One line for the README table and `.env.example`. */
  readonly doc: string;
  /** Completes "X must be …": the error and the docs' "accepts" column. */
  readonly accepts: string;
  /** Absent: the variable is optional and its value `undefined` when unset. */
  readonly fallback: V | ModeDefault<V> | undefined;
  /** Errors never repeat the value: it is, or may hold, a secret. */
  readonly secret: boolean;
  /** An empty value is a value (not "unset"): PRODUCTS_FLAT= sends no parameter. */
  readonly emptyIsValue: boolean;
  read(raw: string): Present<V> | typeof REJECTED | Rejected | typeof UNSET;
  /** The value as it would be written in the environment. */
  show(value: Present<V>): string;
}

// Settings differ in value type, which `read`, `show` and `fallback` use both ways.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- `unknown` would refuse every setting but Setting<unknown>.
export type AnySetting = Setting<any>;

interface Doc {
  doc: string;
}

/** `offAt0`: 0 is also accepted, meaning off, below a `min` that keeps a setting from running too often. */
type IntegerOptions = Doc & { min: number; max: number; offAt0?: boolean };

/** A whole number within bounds; without a default the variable is optional. */
export function integer(options: IntegerOptions & { default: number }): Setting<number>;
export function integer(options: IntegerOptions): Setting<number | undefined>;
export function integer(options: IntegerOptions & { default?: number }): Setting<number | undefined> {
  const { min, max } = options;
  const off = options.offAt0 === true;
  return {
    doc: options.doc,
    accepts: `${off ? '0 (off) or ' : ''}a whole number from ${min} to ${max}`,
    fallback: options.default,
    secret: false,
    emptyIsValue: false,
    read: (raw) =>
      /^\d+$/.test(raw) && ((off && Number(raw) === 0) || (Number(raw) >= min && Number(raw) <= max)) ? Number(raw) : REJECTED,
    show: String,
  };
}

export function oneOf<const T extends string>(values: readonly T[], options: Doc & { default: T | ModeDefault<T> }): Setting<T> {
  return {
    doc: options.doc,
    accepts: `one of ${values.join(', ')}`,
    fallback: options.default,
    secret: false,
    emptyIsValue: false,
    read: (raw) => ((values as readonly string[]).includes(raw) ? (raw as T) : REJECTED),
    show: (value) => value,
  };
}

export function onOff(options: Doc & { default: boolean | ModeDefault<boolean> }): Setting<boolean> {
  return {
    doc: options.doc,
    accepts: 'one of on, off',
    fallback: options.default,
    secret: false,
    emptyIsValue: false,
    read: (raw) => (raw === 'on' ? true : raw === 'off' ? false : REJECTED),
    show: (value) => (value ? 'on' : 'off'),
  };
}

type TextOptions = Doc & {
  secret?: boolean;
  emptyIsValue?: boolean;
  /** What is wrong with a value (undefined: nothing), in words that quote none of it; `accepts` says what is. */
  problem?: (value: string) => string | undefined;
  /** A value must match it; one that does not is refused with `accepts` alone (which then says the rule, once). */
  pattern?: RegExp;
  accepts?: string;
};

/** Free text; without a default the variable is optional. */
export function text(options: TextOptions & { default: string }): Setting<string>;
export function text(options: TextOptions): Setting<string | undefined>;
export function text(options: TextOptions & { default?: string }): Setting<string | undefined> {
  return {
    doc: options.doc,
    accepts: options.accepts ?? 'any text',
    fallback: options.default,
    secret: options.secret ?? false,
    emptyIsValue: options.emptyIsValue ?? false,
    read(raw) {
      if (options.pattern && !options.pattern.test(raw)) return REJECTED;
      const problem = options.problem?.(raw);
      return problem === undefined ? raw : new Rejected(problem);
    },
    show: (value) => value,
  };
}

/** An optional http(s) address, kept without its trailing slashes. */
export function httpUrl(options: Doc): Setting<string | undefined> {
  return {
    doc: options.doc,
    accepts: 'an http:// or https:// address',
    fallback: undefined,
    secret: false,
    emptyIsValue: false,
    read(raw) {
      if (!URL.canParse(raw)) return REJECTED;
      const { protocol } = new URL(raw);
      return protocol === 'http:' || protocol === 'https:' ? raw.replace(/\/+$/, '') : REJECTED;
    },
    show: (value) => value,
  };
}

/** A fraction from 0 to 1 (a sampling ratio). */
export function ratio(options: Doc & { default: number }): Setting<number> {
  return {
    doc: options.doc,
    accepts: 'a number from 0 to 1',
    fallback: options.default,
    secret: false,
    emptyIsValue: false,
    read: (raw) => (/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(raw) ? Number(raw) : REJECTED),
    show: String,
  };
}

/** An optional Redis address; it may hold a password, so it is never repeated. */
export function redisUrl(options: Doc): Setting<string | undefined> {
  return {
    doc: options.doc,
    accepts: 'a redis:// or rediss:// address',
    fallback: undefined,
    secret: true,
    emptyIsValue: false,
    read: (raw) => (/^rediss?:\/\/./.test(raw) ? raw : REJECTED),
    show: (value) => value,
  };
}

/** A PostgreSQL address (`postgres://` or `postgresql://`, as libpq and `pg` read it); secret, as it may carry a password. */
export function postgresUrl(options: Doc): Setting<string | undefined> {
  return {
    doc: options.doc,
    accepts: 'a postgres:// or postgresql:// address',
    fallback: undefined,
    secret: true,
    emptyIsValue: false,
    read: (raw) => (/^postgres(ql)?:\/\/./.test(raw) ? raw : REJECTED),
    show: (value) => value,
  };
}

interface ListItem {
  pattern?: RegExp;
  valid?: (entry: string) => boolean;
  /** What is wrong with an entry (undefined: nothing), in words that quote none of it; the error names the entry by its place. */
  problem?: (entry: string) => string | undefined;
  accepts: string;
}

/** An item's `problem` from a parser that answers the item or a sentence saying what is wrong with it. */
export const problemOf =
  <T>(parse: (entry: string) => T | string) =>
  (entry: string): string | undefined => {
    const parsed = parse(entry);
    return typeof parsed === 'string' ? parsed : undefined;
  };

/** Comma-separated items, trimmed, empty ones dropped; a list of none counts as unset. */
export function list(
  options: Doc & {
    default?: string[] | ModeDefault<string[]>;
    item?: ListItem;
    secret?: boolean;
    /** What is wrong with the entries taken together (undefined: nothing), in words that quote none of them. */
    together?: (items: string[]) => string | undefined;
  },
): Setting<string[]> {
  const { item } = options;
  return {
    doc: options.doc,
    accepts: item?.accepts ?? 'a comma-separated list',
    fallback: options.default ?? [],
    secret: options.secret ?? false,
    emptyIsValue: false,
    read(raw) {
      const items = raw
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
      if (items.length === 0) return UNSET;
      const valid = (entry: string) => (item?.pattern?.test(entry) ?? true) && (item?.valid?.(entry) ?? true);
      if (!items.every(valid)) return REJECTED;
      for (const [index, entry] of items.entries()) {
        const problem = item?.problem?.(entry);
        if (problem !== undefined) return new Rejected(`entry ${index + 1} of ${items.length}: ${problem}`);
      }
      const problem = options.together?.(items);
      return problem === undefined ? items : new Rejected(problem);
    },
    show: (value) => value.join(','),
  };
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A length of time written with its unit (`90s`, `30m`, `12h`, `7d`), read as milliseconds. */
export function duration(options: Doc & { min: number; max: number; default: number }): Setting<number> {
  const { min, max } = options;
  const show = (ms: number) => {
    const unit = (['d', 'h', 'm', 's'] as const).find((u) => ms % UNIT_MS[u] === 0) ?? 's';
    return `${ms / UNIT_MS[unit]}${unit}`;
  };
  return {
    doc: options.doc,
    accepts: `a length of time from ${show(min)} to ${show(max)}, as a whole number and a unit (s, m, h, d), e.g. 7d`,
    fallback: options.default,
    secret: false,
    emptyIsValue: false,
    read(raw) {
      const match = /^(\d{1,9})([smhd])$/.exec(raw);
      if (!match) return REJECTED;
      const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
      return ms >= min && ms <= max ? ms : REJECTED;
    },
    show,
  };
}
