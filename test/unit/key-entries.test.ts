import { describe, expect, it } from 'vitest';
import { parseKeyEntry, parseKeyFile } from '../../src/config/index.js';

/* API_KEYS entries and API_KEYS_FILE lines: what each grants, and problems that never repeat a key. */

describe.concurrent('key entries', () => {
  it('grant every permission without a list, and those listed after the last colon', () => {
    expect(parseKeyEntry('k')).toEqual({ key: 'k', permissions: ['read', 'subscribe', 'pay'] });
    expect(parseKeyEntry(' k : pay + read ')).toEqual({ key: 'k', permissions: ['pay', 'read'] });
    expect(parseKeyEntry('k:read+read')).toEqual({ key: 'k', permissions: ['read'] });
    expect(parseKeyEntry('urn:k:subscribe')).toEqual({ key: 'urn:k', permissions: ['subscribe'] });
  });

  it('refuse a typo rather than make it part of a key with every permission', () => {
    for (const entry of ['sekrit:raed', 'sekrit:read+', 'sekrit:', ':read', '']) {
      const problem = parseKeyEntry(entry);
      expect(typeof problem, entry).toBe('string');
      expect(problem, entry).not.toContain('sekrit');
    }
  });

  it('read a file line by line, skipping comments and blank lines, naming bad lines by number', () => {
    const { entries, problems } = parseKeyFile('# dashboards\r\ndash:read+subscribe   # the wall screen\n\n  \nsekrit:raed\ntill:pay\n');
    expect(entries).toEqual([
      { key: 'dash', permissions: ['read', 'subscribe'] },
      { key: 'till', permissions: ['pay'] },
    ]);
    expect(problems).toEqual(['line 5: permissions after the last ":" must be read, subscribe, pay joined by "+"']);
  });
});
