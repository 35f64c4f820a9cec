import { rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LAYERS, looseRootFiles, unreached, violations } from '../../scripts/check-layers.js';

/* The layering check CI runs (scripts/check-layers.ts): it holds for src/, and it would catch an import that points up. */

describe('check:layers', () => {
  it('finds no import against the layering in src/', () => {
    expect(violations()).toEqual([]);
  });

  it('names an import that points up (the HTTP kit reaching into a feature), with its file and line', () => {
    const probe = new URL('../../src/http/zz-layer-probe.ts', import.meta.url);
    writeFileSync(probe, "// probe\nimport { schema } from '../graphql/schema.js';\nexport const probe = schema;\n");
    try {
      expect(violations().filter((v) => v.file.includes('zz-layer-probe'))).toEqual([{ file: 'http/zz-layer-probe.ts', line: 2, from: 'http', to: 'graphql' }]);
    } finally {
      rmSync(probe);
    }
  });

  it('gives every top-level part of src/ exactly one layer', () => {
    const parts = LAYERS.flat();
    expect(new Set(parts).size).toBe(parts.length);
  });

  it('finds every file of src/ reached from main.ts, scripts/, bench/, web/ or codegen.ts, and names one that is not', () => {
    expect(unreached()).toEqual([]);
    const probe = new URL('../../src/http/zz-unreached-probe.ts', import.meta.url);
    writeFileSync(probe, 'export const nobodyImportsThis = 1;\n');
    try {
      expect(unreached()).toEqual(['http/zz-unreached-probe.ts']);
    } finally {
      rmSync(probe);
    }
  });

  it('keeps only main.ts and errors.ts at the root of src/', () => {
    expect(looseRootFiles()).toEqual([]);
    expect(looseRootFiles([new URL('../../src/context.ts', import.meta.url).pathname])).toEqual(['context.ts']);
  });
});
