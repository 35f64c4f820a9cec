import { describe, expect, it } from 'vitest';
import { MAX_SUBJECT, messageProblem } from '../../scripts/check-commits.js';

describe('check:commits', () => {
  it('takes a short subject, alone or with a body after a blank line', () => {
    expect(messageProblem('Name the WebSocket close codes\n')).toBeUndefined();
    expect(messageProblem('Name the WebSocket close codes\n\nWhy, at length.\n')).toBeUndefined();
    expect(messageProblem(`${'x'.repeat(MAX_SUBJECT)}\n`)).toBeUndefined();
  });

  it('names a long subject, a body glued to it and an empty one', () => {
    expect(messageProblem(`${'x'.repeat(MAX_SUBJECT + 1)}\n`)).toBe(`a subject of ${MAX_SUBJECT + 1} characters (at most ${MAX_SUBJECT})`);
    expect(messageProblem('Subject\nbody on the next line\n')).toBe('no blank line between the subject and the body');
    expect(messageProblem('\n\nbody\n')).toBe('an empty subject');
  });
});
