import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { filesUnder, looseRootFiles, partsWithoutLayer, sharedNames, SRC, unreached } from '../../scripts/check-layers.js';
import { forbiddenImports, LAYERS } from '../../scripts/layers.js';

/*
 * The layering of src/ (scripts/layers.ts): ESLint's import rule catches an
 * import that points up, and `check:layers` the rest of the layout (CI runs both).
 * The probes are files that exist only in the test (linted as text, or named
 * in the list of files): one written into src/ was seen, now and then, by
 * another test file reading src/ at the same time.
 */

describe('the layering of src/', () => {
  it('names an import that points up (the HTTP kit reaching into a feature), with its file, line and rule', async () => {
    const probe = join(SRC, 'http', 'zz-layer-probe.ts');
    // The layering rule alone: the type-aware rules would need the probe in the TypeScript program.
    const eslint = new ESLint({ overrideConfigFile: true, overrideConfig: [(await import('../../eslint.config.js')).layering] });
    const [result] = await eslint.lintText("// probe\nimport { schema } from '../graphql/schema.js';\nexport const probe = schema;\n", {
      filePath: probe,
    });
    expect(result?.messages.map(({ ruleId, line }) => ({ ruleId, line }))).toEqual([{ ruleId: 'import-x/no-restricted-paths', line: 2 }]);
  }, 60_000);

  it('gives every top-level part of src/ exactly one layer, and forbids each part what lies above it', () => {
    const parts = LAYERS.flat();
    expect(new Set(parts).size).toBe(parts.length);
    expect(partsWithoutLayer()).toEqual([]);
    const zones = forbiddenImports();
    expect(zones.find((zone) => zone.target === './src/contract')?.from).toContain('./src/graphql');
    expect(zones.find((zone) => zone.target === './src/main.ts')).toBeUndefined();
  });

  it('finds every file of src/ reached from main.ts, scripts/, bench/, web/ or codegen.ts, and names one that is not', () => {
    expect(unreached()).toEqual([]);
    expect(unreached([...filesUnder(SRC), join(SRC, 'http', 'zz-unreached-probe.ts')])).toEqual(['http/zz-unreached-probe.ts']);
  });

  it('keeps only main.ts and errors.ts at the root of src/', () => {
    expect(looseRootFiles()).toEqual([]);
    expect(looseRootFiles([new URL('../../src/context.ts', import.meta.url).pathname])).toEqual(['context.ts']);
  });

  it('gives every file of src/ a name of its own, and names two that share one', () => {
    expect(sharedNames()).toEqual([]);
    expect(sharedNames([...filesUnder(SRC), join(SRC, 'http', 'errors.ts')])).toEqual(['errors.ts: src/errors.ts, src/http/errors.ts']);
  });
});
