import { describe, expect, it } from 'vitest';
import { loadConfig, parseKeyEntry, parseKeyFile } from '../../src/config/config.js';

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

  it('name an account after their permissions; a key holding "@" that names none keeps meaning what it did', () => {
    expect(parseKeyEntry('k:read+subscribe@acct-a')).toEqual({ key: 'k', permissions: ['read', 'subscribe'], account: 'acct-a' });
    expect(parseKeyEntry(' urn:k:pay @ Acct.2_b ')).toEqual({ key: 'urn:k', permissions: ['pay'], account: 'Acct.2_b' });
    expect(parseKeyEntry('k:read')).not.toHaveProperty('account');
    expect(parseKeyEntry('user@example.com')).toEqual({ key: 'user@example.com', permissions: ['read', 'subscribe', 'pay'] });
    expect(parseKeyEntry('user@example.com:read')).toEqual({ key: 'user@example.com', permissions: ['read'] });
  });

  it('refuse an account that is not a valid name, never repeating the key', () => {
    for (const entry of ['sekrit:read@', 'sekrit:read@-a', 'sekrit:read@a/b', `sekrit:read@${'a'.repeat(65)}`, 'sekrit:read@a@b']) {
      const problem = parseKeyEntry(entry);
      expect(problem, entry).toMatch(/^the account after the permissions' "@" must /);
      expect(problem, entry).not.toContain('sekrit');
    }
    expect(parseKeyEntry('sekrit:raed@a')).toBe('permissions after the last ":" must be read, subscribe, pay joined by "+"');
    expect(parseKeyEntry('sekrit:@a')).toBe('permissions after the last ":" must be read, subscribe, pay joined by "+"');
  });

  it('in API_KEYS carry their account into the configuration, and a bad one stops the start without naming the key', () => {
    expect(loadConfig({ API_KEYS: 'k1:read+subscribe@acct-a,k2' }).apiKeys).toEqual([
      { key: 'k1', permissions: ['read', 'subscribe'], account: 'acct-a' },
      { key: 'k2', permissions: ['read', 'subscribe', 'pay'] },
    ]);
    expect(() => loadConfig({ API_KEYS: 'k2,sekrit:read@a/b' })).toThrow(/^API_KEYS must be .*@account; entry 2 of 2: the account after/);
    expect(() => loadConfig({ API_KEYS: 'k2,sekrit:read@a/b' })).not.toThrow(/sekrit/);
  });

  it('read a file line by line, skipping comments and blank lines, naming bad lines by number', () => {
    const { entries, problems } = parseKeyFile(
      '# dashboards\r\ndash:read+subscribe   # the wall screen\n\n  \nsekrit:raed\ntill:pay\nother:read@acct-b\nsekrit:read@acct b\n',
    );
    expect(entries).toEqual([
      { key: 'dash', permissions: ['read', 'subscribe'] },
      { key: 'till', permissions: ['pay'] },
      { key: 'other', permissions: ['read'], account: 'acct-b' },
    ]);
    expect(problems).toEqual([
      'line 5: permissions after the last ":" must be read, subscribe, pay joined by "+"',
      'line 8: the account after the permissions\' "@" must be letters, digits, ".", "_" and "-", starting with a letter or digit',
    ]);
  });

  it('say in API_KEYS which entry is wrong and why, never the key', () => {
    const refusal = (value: string) => {
      try {
        loadConfig({ API_KEYS: value });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal('ok-key,sekrit-key:read@-bad')).toMatch(
      /; entry 2 of 2: the account after the permissions' "@" must be letters, digits/,
    );
    expect(refusal('sekrit-key:read@')).toMatch(/; entry 1 of 1: the account after the permissions' "@" must not be empty$/);
    expect(refusal('sekrit-key:reed')).toMatch(/; entry 1 of 1: permissions after the last ":" must be read, subscribe, pay/);
    for (const value of ['ok-key,sekrit-key:read@-bad', 'sekrit-key:reed']) expect(refusal(value)).not.toMatch(/sekrit|ok-key/);
  });
});
