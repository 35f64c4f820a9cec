import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../lib/children.js';
import type { Scenario } from '../lib/scenario.js';
import { fmt, median } from '../lib/stats.js';
import { row } from '../lib/table.js';

export const s9: Scenario = {
  name: 'S9',
  title: 'S9 — CPU per read, layer by layer, in one process',
  async run(ctx) {
    ctx.log('S9 layers: in a child process, in turns');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'bench/lib/layers-main.ts'], {
      cwd: REPO_ROOT,
      env: { ...process.env, UPSTREAM_URL: ctx.upstream.url },
      timeout: 600_000,
      maxBuffer: 1 << 20,
    });
    // Each layer's CPU per read by round; `over`: the layer it adds to, none for one that stands alone.
    const layers = JSON.parse(stdout.trim().split('\n').at(-1)!) as Array<{ name: string; over?: string; rounds: number[] }>;
    const byName = new Map(layers.map((layer) => [layer.name, median(layer.rounds)]));
    return layers.map((layer) => {
      const [us, over] = [byName.get(layer.name)!, layer.over === undefined ? undefined : byName.get(layer.over)];
      return row('S9', layer.name, {
        value: `${fmt(us, 1)} µs CPU per read`,
        ratio: over === undefined ? 'by itself' : `adds ${fmt(us - over, 1)} µs`,
        calls: '1.00',
        errors: '0',
        notes: `rounds ${layer.rounds.map((r) => fmt(r, 0)).join(', ')} µs`,
      });
    });
  },
};
