/**
 * The fields of an upstream object that the schema does not name, so a client
 * can still read them (unknown fields are carried through, never dropped). `null` when
 * there are none.
 */
export function extraFields(value: Record<string, unknown>, known: readonly string[]): Record<string, unknown> | null {
  const entries = Object.entries(value).filter(([key]) => !known.includes(key));
  return entries.length === 0 ? null : Object.fromEntries(entries);
}

/**
 * Options of the `extra` field of a type whose upstream object follows
 * `schema` (a contract schema: its keys are the fields the gateway knows).
 */
export function extraFieldOptions<Parent>(schema: { shape: object }, upstreamOf: (parent: Parent) => Record<string, unknown>) {
  const known = Object.keys(schema.shape);
  return {
    type: 'JSONObject' as const,
    nullable: true as const,
    description: 'Fields the upstream sent that this schema does not name, as received; null when there are none.',
    resolve: (parent: Parent) => extraFields(upstreamOf(parent), known),
  };
}
