import { ModeDefault, type AnySetting } from './kinds.js';
import { requirements } from './requirements.js';
import { sections } from './spec.js';

/*
 * The documentation of the spec: the README's configuration table (between
 * the markers) and .env.example. scripts/config-files.ts writes and checks them.
 */

export const TABLE_START = '<!-- config:start: generated from src/config/spec.ts by `npm run codegen`; edit there -->';
export const TABLE_END = '<!-- config:end -->';

const entries = () =>
  Object.entries(sections).map(([title, settings]) => ({ title, settings: Object.entries(settings) as [string, AnySetting][] }));

/** The doc line, then each requirement on the variable. */
const meaning = (name: string, setting: AnySetting, required: string): string =>
  [
    setting.doc,
    ...requirements
      .filter((requirement) => requirement.variable === name)
      .map((requirement) => `${requirement.unset ? 'must be unset' : required} ${requirement.when}`),
  ].join('; ');

/** The default in words, `markup` wrapping each value (backticks for Markdown). */
function defaultText(setting: AnySetting, markup: (value: string) => string): string {
  const show = (value: unknown) => {
    const shown = setting.show(value);
    return shown === '' ? 'none' : markup(shown);
  };
  const { fallback } = setting;
  if (fallback === undefined) return 'none';
  if (fallback instanceof ModeDefault) return `${show(fallback.otherwise)} (${show(fallback.production)} with NODE_ENV=production)`;
  return show(fallback);
}

const cell = (text: string) => text.replaceAll('|', '\\|');

export function renderReadmeTable(): string {
  const rows = ['| variable | default | accepts | meaning |', '|---|---|---|---|'];
  for (const { title, settings } of entries()) {
    rows.push(`| **${cell(title)}** | | | |`);
    for (const [name, setting] of settings) {
      const cells = [
        `\`${name}\``,
        defaultText(setting, (value) => `\`${value}\``),
        setting.accepts,
        meaning(name, setting, '**required**'),
      ];
      rows.push(`| ${cells.map(cell).join(' | ')} |`);
    }
  }
  return [TABLE_START, ...rows, TABLE_END].join('\n');
}

/** `readme` with the text between the markers replaced by the table; throws when a marker is missing. */
export function withReadmeTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`README.md has no configuration table markers (${TABLE_START} … ${TABLE_END})`);
  return readme.slice(0, start) + renderReadmeTable() + readme.slice(end + TABLE_END.length);
}

export function renderEnvExample(): string {
  const lines = [
    '# Every environment variable vending-gateway reads, each at its default (commented out).',
    '# Generated from src/config/spec.ts by `npm run codegen`; edit there, not here.',
    '# A bad value stops the gateway with one line naming the variable.',
    '# To use it: cp .env.example .env, then uncomment and change what you need. The start command',
    '# (npm start, node dist/main.js) reads .env from its working directory; the environment wins over it.',
  ];
  for (const { title, settings } of entries()) {
    lines.push('', `# ── ${title} ──`);
    for (const [name, setting] of settings) {
      lines.push('', `# ${meaning(name, setting, 'required')}`);
      lines.push(`# Accepts ${setting.accepts}; default ${defaultText(setting, (value) => value)}.`);
      const { fallback } = setting;
      // A secret's example stays empty: uncommented, a made-up key would be accepted.
      const example = fallback instanceof ModeDefault ? fallback.otherwise : fallback;
      const value = fallback === undefined || setting.secret ? '' : setting.show(example as never);
      lines.push(`# ${name}=${value}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
