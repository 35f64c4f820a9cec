/**
 * The fields of an upstream object that the schema does not name, so a client
 * can still read them (DESIGN: unknown fields are carried through). `null` when
 * there are none.
 */
export function extraFields(value: Record<string, unknown>, known: readonly string[]): Record<string, unknown> | null {
  const entries = Object.entries(value).filter(([key]) => !known.includes(key));
  return entries.length === 0 ? null : Object.fromEntries(entries);
}
