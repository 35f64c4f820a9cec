/*
 * The layers of src/, as docs/ARCHITECTURE.md draws them: each top-level part
 * (a folder, or a file at the root of src/) may import only parts of a lower
 * layer, or of its own layer where SAME_LAYER_EDGES says so. ESLint holds every
 * import to it (`import-x/no-restricted-paths`, zones made by `forbiddenImports`
 * in eslint.config.ts); `npm run check:layers` checks the rest of the layout.
 */

/** Lowest first. Parts in one row may not import each other unless listed in SAME_LAYER_EDGES. */
export const LAYERS: string[][] = [
  ['contract', 'errors', 'refusals', 'config', 'tracing', 'timing'],
  ['logging', 'backends'],
  ['http'],
  ['events', 'history', 'auth', 'observability', 'redis', 'postgres'],
  ['graphql', 'rest', 'dashboard'],
  ['subscriptions', 'mcp'],
  ['app'],
  ['main'],
];

/** Imports allowed inside one layer (from → to). */
export const SAME_LAYER_EDGES: Array<[string, string]> = [
  // Account names in the configuration (API_KEYS entries, webhook secrets) are the contract's (contract/accounts.ts says what one may be).
  ['config', 'contract'],
  // The refusals' wording sits beside the codes it goes with: each entry builds its GatewayError.
  ['refusals', 'errors'],
  // Metrics count webhook outcomes by the route's own names for them.
  ['observability', 'events'],
  // The Redis adapters implement the event log's interface.
  ['redis', 'events'],
  // The history is a read model of published events; its Redis store lives with the other Redis adapters.
  ['history', 'events'],
  ['redis', 'history'],
  // The PostgreSQL history applies the history's own rules to the events' records.
  ['postgres', 'history'],
  ['postgres', 'events'],
];

/** Parts that are one file at the root of src/ (the others are folders). */
const FILE_PARTS = new Set(['errors', 'main']);

const pathOf = (part: string) => (FILE_PARTS.has(part) ? `./src/${part}.ts` : `./src/${part}`);

/** For each part, the parts it may not import: the zones of `import-x/no-restricted-paths`. */
export function forbiddenImports(): Array<{ target: string; from: string[]; message: string }> {
  const layerOf = new Map(LAYERS.flatMap((row, index) => row.map((part) => [part, index] as const)));
  const sameLayer = new Set(SAME_LAYER_EDGES.map(([from, to]) => `${from}→${to}`));
  return LAYERS.flat().flatMap((part) => {
    const own = layerOf.get(part)!;
    const forbidden = LAYERS.flat().filter((other) => {
      const theirs = layerOf.get(other)!;
      return other !== part && !(theirs < own || (theirs === own && sameLayer.has(`${part}→${other}`)));
    });
    if (forbidden.length === 0) return [];
    return [
      {
        target: pathOf(part),
        from: forbidden.map(pathOf),
        message:
          `${part} may not import a part of its own or a higher layer unless SAME_LAYER_EDGES allows it ` +
          `(scripts/layers.ts, docs/ARCHITECTURE.md)`,
      },
    ];
  });
}
