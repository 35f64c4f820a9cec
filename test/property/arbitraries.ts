import fc from 'fast-check';
import { createDemoData } from '../../src/backends/memory/demo-data.js';

/*
 * Generators and checks shared by the property tests. Every property runs
 * with this fixed seed, so a run is repeatable and a failure can be replayed.
 */

export const SEED = 42;

/** fc.assert parameters: the fixed seed and how many runs. */
export const runs = (numRuns: number): { seed: number; numRuns: number } => ({ seed: SEED, numRuns });

const demo = createDemoData();
export const TRANSACTION_IDS = demo.transactions.slice(0, 8).map((t) => t.transactionId);
export const VENDING_IDS = demo.vendings.slice(0, 8).map((v) => v.vendingId);

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Any JSON value, kept small. */
export const jsonValue = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;

/** Any text: every code point, lone surrogates included. */
export const anyText = (maxLength = 40) => fc.string({ unit: 'binary', maxLength });

const chars = (from: number, to: number) => fc.integer({ min: from, max: to }).map((code) => String.fromCharCode(code));

/** A value fetch lets us send in a header: visible ASCII and Latin-1 (a ByteString). */
export const headerValue = fc.string({
  unit: fc.oneof({ weight: 9, arbitrary: chars(0x20, 0x7e) }, { weight: 1, arbitrary: chars(0xa0, 0xff) }),
  maxLength: 60,
});

/** Percent-encodes the UTF-8 bytes of everything but unreserved characters (lone surrogates become U+FFFD). */
export const percentEncode = (text: string): string =>
  [...Buffer.from(text, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');

/** Ids: real demo ones, UUIDs, odd text, very long ones. */
export const idLike = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...TRANSACTION_IDS, ...VENDING_IDS) },
  { weight: 2, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: anyText(24) },
  { weight: 1, arbitrary: fc.integer({ min: 200, max: 5_000 }).map((n) => 'x'.repeat(n)) },
);

/** JSON text of arrays (or objects) nested `depth` deep. */
export const nestedJson = (depth: number, kind: 'array' | 'object' = 'array'): string =>
  kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}null${'}'.repeat(depth)}`;

/**
 * Nesting the main properties draw from (past the gateway's 64-level bound, so
 * both answers occur); each file sends far deeper JSON in a focused property.
 */
export const nestedJsonText = fc
  .tuple(fc.integer({ min: 1, max: 300 }), fc.constantFrom('array' as const, 'object' as const))
  .map(([depth, kind]) => nestedJson(depth, kind));

/** A value of the right shape, or sometimes any JSON value instead. */
export const mostly = <T>(right: fc.Arbitrary<T>): fc.Arbitrary<T | JsonValue> =>
  fc.oneof({ weight: 4, arbitrary: right }, { weight: 1, arbitrary: jsonValue });

const decimal = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constant(null));

/** A product line of the contract (part 2). */
export const productLine = fc.record(
  {
    productId: idLike,
    productName: fc.option(anyText(16), { nil: null }),
    productPrice: decimal,
    productSku: fc.option(anyText(8), { nil: null }),
    quantity: decimal,
  },
  { requiredKeys: ['productId'] },
);

/** A transaction of the contract (part 2), always valid. */
export const transaction = fc.record({
  transactionId: idLike.filter((id) => id !== ''),
  status: fc.oneof(fc.constantFrom('completed', 'pending', 'active', 'refunded'), anyText(12)),
  products: fc.array(productLine, { maxLength: 3 }),
});

/** A transaction with some fields of the wrong type or missing. */
export const mutatedTransaction = fc.record(
  {
    transactionId: mostly(idLike),
    status: mostly(anyText(12)),
    products: mostly(fc.array(mostly(productLine), { maxLength: 3 })),
    customerId: mostly(idLike),
  },
  { requiredKeys: [] },
);

type Edit = { kind: 'drop' | 'set'; at: number; value: JsonValue } | { kind: 'add'; key: string; value: JsonValue };
const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constantFrom('drop' as const, 'set' as const), at: fc.nat(), value: jsonValue }),
  fc.record({
    kind: fc.constant('add' as const),
    key: fc.oneof(fc.constantFrom('__proto__', 'constructor', 'type', 'event', 'data', 'id'), anyText(8)),
    value: jsonValue,
  }),
);

/** `object` with up to two top-level edits: a key dropped, a key's value replaced, a key added. */
export const withEdits = <T extends object>(object: fc.Arbitrary<T>): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .tuple(
      object,
      fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 2, arbitrary: fc.array(edit, { minLength: 1, maxLength: 2 }) }),
    )
    .map(([value, edits]) => {
      const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
      for (const e of edits) {
        const keys = Object.keys(copy);
        if (e.kind === 'add') Object.defineProperty(copy, e.key, { value: e.value, enumerable: true, configurable: true, writable: true });
        else if (keys.length > 0 && e.kind === 'drop') delete copy[keys[e.at % keys.length]!];
        else if (keys.length > 0) copy[keys[e.at % keys.length]!] = e.value;
      }
      return copy;
    });

// ---------------------------------------------------------------------------
// Webhook bodies.

/** A valid legacy body of exactly `bytes` bytes (padded through an unknown field), when `tx` is small enough. */
export const legacyOfSize = (tx: object, bytes: number): string => {
  const empty = JSON.stringify({ event: 'transaction', data: { ...tx, note: '' } });
  return JSON.stringify({ event: 'transaction', data: { ...tx, note: 'x'.repeat(Math.max(0, bytes - Buffer.byteLength(empty))) } });
};
const someData = fc.oneof(
  { weight: 5, arbitrary: transaction },
  { weight: 2, arbitrary: mutatedTransaction },
  { weight: 1, arbitrary: jsonValue },
);
/** The legacy webhook form (contract part 6), near-valid: mostly right, with top-level edits. */
export const legacyBody = withEdits(
  fc.record({ event: fc.oneof({ weight: 6, arbitrary: fc.constant('transaction') }, { weight: 1, arbitrary: jsonValue }), data: someData }),
);
const timestamp = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.integer({ min: -1e13, max: 1e13 }),
  fc.double(),
  anyText(12),
  jsonValue,
);
/** The enveloped webhook form, near-valid: id, type, one of the timestamp names, the transaction where it may sit. */
export const envelopedBody = withEdits(
  fc
    .tuple(
      fc.record({
        id: fc.oneof({ weight: 4, arbitrary: fc.uuid().map((u) => `evt_${u}`) }, fc.integer(), fc.constant(''), jsonValue),
        type: fc.oneof({ weight: 6, arbitrary: fc.constant('transaction.update') }, anyText(20), jsonValue),
        data: fc.oneof(someData, fc.record({ object: someData, previous: jsonValue }), fc.record({ transaction: someData })),
      }),
      fc.constantFrom('timestamp', 'created_at', 'createdAt', 'time'),
      timestamp,
    )
    .map(([envelope, field, at]) => ({ ...envelope, [field]: at })),
);
/** A legacy body whose transaction carries an unknown field holding `nested` JSON text. */
export const legacyWith = (tx: object, nested: string) =>
  `{"event":"transaction","data":${JSON.stringify(tx).slice(0, -1)},"nested":${nested}}}`;

// ---------------------------------------------------------------------------
// Checks of what came back.

export interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** The parsed body; undefined when it is not JSON. */
  json: unknown;
}

export async function readAnswer(response: Response): Promise<Answer> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text, json };
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Exactly the contract's error envelope (part 7): `{errors: {message: string}}`. */
export function isErrorEnvelope(value: unknown): boolean {
  if (!isObject(value) || Object.keys(value).join() !== 'errors') return false;
  const { errors } = value;
  return isObject(errors) && Object.keys(errors).join() === 'message' && typeof errors.message === 'string' && errors.message !== '';
}

/** Whether a message shows no stack frame and no source location. */
export const leaksNothing = (message: string): boolean => !message.includes('    at ') && !message.includes('.ts:');

/** A short description of a request and its answer, for assertion messages. */
export const describeExchange = (request: unknown, answer: Answer): string =>
  `${JSON.stringify(request).slice(0, 600)} → ${answer.status} ${answer.contentType} ${answer.text.slice(0, 400)}`;

// ---------------------------------------------------------------------------
// Odd ids.

/** Characters an id may hold that a path, a router or a store reads specially, and some that are merely unusual. */
const oddIdPart = fc.constantFrom(
  '/',
  '\\',
  '\u0000',
  '\r',
  '\n',
  '\r\n',
  '\t',
  '\u001b',
  '\u007f',
  '\u0085',
  '\ud800',
  '\udfff',
  '\udc00\ud800',
  '.',
  '..',
  '%',
  '%2F',
  '%00',
  '?',
  '#',
  '&',
  ' ',
  'é',
  '😀',
  '\u2028',
  '\ufeff',
  '\u0301',
);
/** Ids with odd characters: real ones, lone surrogates, separators, control characters, dot segments, percent signs. */
export const oddId = fc.oneof(
  { weight: 2, arbitrary: idLike },
  {
    weight: 4,
    arbitrary: fc.array(fc.oneof(oddIdPart, fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 5 }).map((parts) => parts.join('')),
  },
  { weight: 1, arbitrary: fc.constantFrom('.', '..', '', ' ', '\ud800', '...', 'a/..', '../vendings') },
);

/** Percent-encodes `text` as UTF-8, a lone surrogate as the three bytes UTF-8 would give it (which no decoder accepts). */
export const percentEncodeLoosely = (text: string): string =>
  [...text]
    .map((char) => {
      const code = char.charCodeAt(0);
      if (char.length > 1 || code < 0xd800 || code > 0xdfff) return percentEncode(char);
      return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((byte) => `%${byte.toString(16).toUpperCase()}`)
        .join('');
    })
    .join('');
