import { describe, expect, it } from 'vitest';
import { sharedMarkerChecks } from '../../src/postgres/marker-checks.js';

/*
 * A marker check answers a read only if it was sent after the read began: a read arriving while a check is in flight
 * waits for the next one, which the reads arriving meanwhile share (src/postgres/marker-checks.ts).
 */

/** A stand-in for the database: each read of a marker is answered when the test says, with the value then current. */
function database() {
  let marker = 'm0';
  const sent: Array<{ account: string; answer: () => void; fail: (error: Error) => void }> = [];
  const read = (account: string) =>
    new Promise<string>((resolve, reject) => sent.push({ account, answer: () => resolve(`${account}:${marker}`), fail: reject }));
  return { read, sent, change: (next: string) => (marker = next) };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('shared marker checks', () => {
  it('sends a lone read at once, and never answers a read with a check sent before it began', async () => {
    const db = database();
    const markerNow = sharedMarkerChecks(db.read);
    const first = markerNow('a');
    expect(db.sent).toHaveLength(1);
    // A change commits while the first check is in flight; a read beginning after it must see it.
    db.change('m1');
    const second = markerNow('a');
    const third = markerNow('a');
    expect(db.sent).toHaveLength(1);
    db.sent[0]!.answer();
    expect(await first).toBe('a:m1');
    await settled();
    // The next check, shared by the two reads that arrived meanwhile, is sent once the first is answered.
    expect(db.sent).toHaveLength(2);
    db.change('m2');
    db.sent[1]!.answer();
    expect([await second, await third]).toEqual(['a:m2', 'a:m2']);
    await settled();
    expect(db.sent).toHaveLength(2);
    // Idle again: the next read sends its own at once.
    const fourth = markerNow('a');
    expect(db.sent).toHaveLength(3);
    db.sent[2]!.answer();
    expect(await fourth).toBe('a:m2');
  });

  it("checks each account apart, and hands a failed check's error to the reads that shared it", async () => {
    const db = database();
    const markerNow = sharedMarkerChecks(db.read);
    const a = markerNow('a');
    const b = markerNow('b');
    expect(db.sent.map((s) => s.account)).toEqual(['a', 'b']);
    const waiting = [markerNow('a'), markerNow('a')];
    db.sent[0]!.fail(new Error('gone'));
    await expect(a).rejects.toThrow('gone');
    await settled();
    expect(db.sent.map((s) => s.account)).toEqual(['a', 'b', 'a']);
    db.sent[2]!.fail(new Error('still gone'));
    for (const read of waiting) await expect(read).rejects.toThrow('still gone');
    db.sent[1]!.answer();
    expect(await b).toBe('b:m0');
  });
});
