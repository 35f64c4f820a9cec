import { describe, expect, it } from 'vitest';
import { sharedReads } from '../../src/postgres/shared-reads.js';

/*
 * A read of the database answers a caller only if it was sent after the caller began: a caller arriving while a read
 * of its key is in flight waits for the next one, which the callers arriving meanwhile share
 * (src/postgres/shared-reads.ts; an account's change marker here, by account).
 */

/** A stand-in for the database: each read of a marker is answered when the test says, with the value then current. */
function database() {
  let marker = 'm0';
  const sent: Array<{ account: string; answer: () => void; fail: (error: Error) => void }> = [];
  const read = (account: string) =>
    new Promise<string>((resolve, reject) => sent.push({ account, answer: () => resolve(`${account}:${marker}`), fail: reject }));
  return { read, sent, change: (next: string) => (marker = next) };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('reads shared by the callers waiting for one', () => {
  it('sends a lone read at once, and never answers a caller with a read sent before it began', async () => {
    const db = database();
    const markerNow = sharedReads((account: string) => account, db.read);
    const first = markerNow('a');
    expect(db.sent).toHaveLength(1);
    // A change commits while the first read is in flight; a caller beginning after it must see it.
    db.change('m1');
    const second = markerNow('a');
    const third = markerNow('a');
    expect(db.sent).toHaveLength(1);
    db.sent[0]!.answer();
    expect(await first).toBe('a:m1');
    await turn();
    // The next read, shared by the two callers that arrived meanwhile, is sent once the first is answered.
    expect(db.sent).toHaveLength(2);
    db.change('m2');
    db.sent[1]!.answer();
    expect([await second, await third]).toEqual(['a:m2', 'a:m2']);
    await turn();
    expect(db.sent).toHaveLength(2);
    // Idle again: the next caller sends its own at once.
    const fourth = markerNow('a');
    expect(db.sent).toHaveLength(3);
    db.sent[2]!.answer();
    expect(await fourth).toBe('a:m2');
  });

  it("reads each key apart, and hands a failed read's error to the callers that shared it", async () => {
    const db = database();
    const markerNow = sharedReads((account: string) => account, db.read);
    const a = markerNow('a');
    const b = markerNow('b');
    expect(db.sent.map((s) => s.account)).toEqual(['a', 'b']);
    const waiting = [markerNow('a'), markerNow('a')];
    db.sent[0]!.fail(new Error('gone'));
    await expect(a).rejects.toThrow('gone');
    await turn();
    expect(db.sent.map((s) => s.account)).toEqual(['a', 'b', 'a']);
    db.sent[2]!.fail(new Error('still gone'));
    for (const read of waiting) await expect(read).rejects.toThrow('still gone');
    db.sent[1]!.answer();
    expect(await b).toBe('b:m0');
  });
});
