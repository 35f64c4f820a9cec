import type * as Sdl from './generated/schema-types.js';

/*
 * Compile-time guard that the Pothos code and the checked-in SDL agree. The
 * SDL is printed from this code by `npm run codegen`, and its types land in
 * generated/schema-types.ts; each type here passes its field map through one
 * of these, so renaming a field here without regenerating fails the
 * typecheck, just as `npm run codegen:check` fails.
 */

type Names<T> = Exclude<keyof T, '__typename'>;

/** Exactly the names of `K`: none missing, none extra. */
export const exactly =
  <K extends PropertyKey>() =>
  <F extends Record<K, unknown>>(fields: F & Record<Exclude<keyof F, K>, never>): F =>
    fields;

/** Some of the names of `K` (a root type spread over several files), none extra. */
export const someOf =
  <K extends PropertyKey>() =>
  <F extends Partial<Record<K, unknown>>>(fields: F & Record<Exclude<keyof F, K>, never>): F =>
    fields;

export const fieldsOf = <T>() => exactly<Names<T>>();
export const rootFieldsOf = <T>() => someOf<Names<T>>();

export type { Sdl };
