import { Writable } from 'node:stream';

/** A log destination that hands each JSON line the logger writes to `onLine`, parsed. */
export function jsonLines<T = Record<string, unknown>>(onLine: (line: T) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) onLine(JSON.parse(line) as T);
      done();
    },
  });
}
