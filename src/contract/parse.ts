import type { z } from 'zod';
import { productLineSchema, transactionSchema, vendingSchema, type ProductLine, type Transaction, type Vending } from './resources.js';

/*
 * The tolerant reader of what the service answers (the rule is here, once).
 * The contract leaves required flags and bounds unshown, so a resource the
 * service sends is read field by field, never refused as a whole for one
 * field: a known field that is absent (where the gateway needs it) or of
 * another JSON type is a drift. A drift that a lossless conversion undoes
 * (`"2.50"` → 2.5, `"true"` → true, an integer id → its digits) is
 * converted; any other leaves the field out of what is read, and the drift
 * is remembered against the object read, so whoever serves that field
 * (GraphQL, per field) can say so instead of answering a made-up value.
 * Only a resource that is not an object at all is a ContractViolation.
 */

/** A value that does not have the contract's shape; `issues` name each path. */
export class ContractViolation extends Error {
  constructor(
    readonly what: string,
    readonly issues: string[],
  ) {
    super(`${what} does not match the contract: ${issues.join('; ')}`);
    this.name = 'ContractViolation';
  }
}

export type ResourceName = 'transaction' | 'vending' | 'product_line';
/**
 * `missing`: absent or null where the gateway needs it; `wrong_type`: another JSON type; `converted`: another type, converted losslessly.
 */
export type DriftKind = 'missing' | 'wrong_type' | 'converted';

/** One field of one resource the service sent otherwise than the contract shows. */
export interface Drift {
  resource: ResourceName;
  /** A field the contract names (never a name the service chose). */
  field: string;
  kind: DriftKind;
  /** The JSON type the service sent (`undefined` when absent). */
  sent: string;
  /** The JSON type the contract shows. */
  expected: string;
}

/** What was read of each object, by field; every object read is here, drifts or not. */
const driftsByObject = new WeakMap<object, ReadonlyMap<string, Drift>>();

/** Whether `value` came out of the tolerant reader (it then carries its drifts). */
export const wasRead = (value: object): boolean => driftsByObject.has(value);

/** The drift of `field` on a resource read from the service, if it had one. */
export const driftOf = (resource: object, field: string): Drift | undefined => driftsByObject.get(resource)?.get(field);

/** Every drift of a resource read from the service and of the product lines inside it. */
export function driftsIn(resource: object): Drift[] {
  const own = [...(driftsByObject.get(resource)?.values() ?? [])];
  const lines = (resource as { products?: unknown }).products;
  if (!Array.isArray(lines)) return own;
  return own.concat(lines.flatMap((line: unknown) => (isJsonObject(line) ? [...(driftsByObject.get(line)?.values() ?? [])] : [])));
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const jsonType = (value: unknown): string => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

/** A JSON number's text, nothing around it: converting it to a number loses nothing. */
const NUMBER_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** The lossless conversion of `value` to the `expected` JSON type, or undefined when there is none. */
function converted(value: unknown, expected: string): unknown {
  if (expected === 'number' && typeof value === 'string' && NUMBER_TEXT.test(value)) {
    const number = Number(value);
    return Number.isFinite(number) ? number : undefined;
  }
  if (expected === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  if (expected === 'string' && typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/** The JSON type a field's schema wants, as its failed check names it. */
function expectedOf(issue: z.core.$ZodIssue | undefined): string {
  return issue?.code === 'invalid_type' ? String(issue.expected) : 'another shape';
}

type Shape = Record<string, z.ZodType>;

/**
 * What a field's check accepts outright, read off its schema once: a plain
 * JSON type with no refinement, optional and nullable or not. A value this
 * accepts passes the schema without running it (most fields of most answers);
 * anything else is judged by the schema itself, so the schema stays the rule.
 */
function plainAcceptance(schema: z.ZodType): ((value: unknown) => boolean) | undefined {
  let def = schema._zod.def as { type: string; innerType?: z.ZodType; checks?: unknown[] };
  let optional = false;
  let nullable = false;
  for (;;) {
    if (def.type === 'optional' && def.innerType) optional = true;
    else if (def.type === 'nullable' && def.innerType) nullable = true;
    else break;
    def = def.innerType._zod.def;
  }
  if (def.checks?.length) return undefined;
  const base =
    def.type === 'string'
      ? (value: unknown) => typeof value === 'string'
      : def.type === 'number'
        ? (value: unknown) => typeof value === 'number' && Number.isFinite(value)
        : def.type === 'boolean'
          ? (value: unknown) => typeof value === 'boolean'
          : def.type === 'unknown'
            ? () => true
            : undefined;
  if (!base) return undefined;
  return (value) => (value === undefined ? optional : value === null ? nullable : base(value));
}

/** A shape's fields with their checks and what each accepts outright, made once per shape. */
const fieldsOfShape = new Map<Shape, Array<[string, z.ZodType, ((value: unknown) => boolean) | undefined]>>();
function fieldsOf(shape: Shape) {
  let fields = fieldsOfShape.get(shape);
  if (!fields) {
    fields = Object.entries(shape).map(([field, check]) => [field, check, plainAcceptance(check)]);
    fieldsOfShape.set(shape, fields);
  }
  return fields;
}

/** Whether `value` passes `schema` without running it (exported for the test that holds it to the schema). */
export const acceptedOutright = (schema: z.ZodType, value: unknown): boolean => plainAcceptance(schema)?.(value) ?? false;

/**
 * The drifts of every object read without any: one map for all, so an answer
 * true to the contract adds nothing young to the WeakMap (whose values a young
 * collection keeps one round even when their keys are gone).
 */
const NO_DRIFTS: ReadonlyMap<string, Drift> = new Map();

/**
 * Reads one object field by field with the contract schema's field checks.
 * Fields the schema does not name are kept as received, in their order; the
 * result holds converted values, and leaves out the fields that drifted
 * without a conversion.
 */
function readObject(
  resource: ResourceName,
  shape: Shape,
  value: Record<string, unknown>,
  readField?: (field: string, sent: unknown, drifts: Map<string, Drift>) => unknown,
): Record<string, unknown> {
  const drifts = new Map<string, Drift>();
  // Every field in the order sent; known ones are then replaced by what is read of them, or left out.
  const read: Record<string, unknown> = { ...value };
  for (const [field, check, accepts] of fieldsOf(shape)) {
    const sent = value[field];
    if (readField) {
      const own = readField(field, sent, drifts);
      if (own !== undefined) {
        read[field] = own;
        continue;
      }
    }
    if (accepts?.(sent)) continue;
    const result = check.safeParse(sent);
    if (result.success) continue;
    const expected = expectedOf(result.error.issues[0]);
    const conversion = sent === undefined || sent === null ? undefined : converted(sent, expected);
    const kind: DriftKind = conversion !== undefined ? 'converted' : sent === undefined || sent === null ? 'missing' : 'wrong_type';
    drifts.set(field, { resource, field, kind, sent: sent === undefined ? 'undefined' : jsonType(sent), expected });
    if (conversion !== undefined) read[field] = conversion;
    else delete read[field];
  }
  driftsByObject.set(read, drifts.size > 0 ? drifts : NO_DRIFTS);
  return read;
}

function requireObject(what: string, value: unknown): Record<string, unknown> {
  if (!isJsonObject(value)) throw new ContractViolation(what, [`(root): expected an object, received ${jsonType(value)}`]);
  return value;
}

const lineShape = productLineSchema.shape as unknown as Shape;

export const parseProductLine = (value: unknown): ProductLine =>
  readObject('product_line', lineShape, requireObject('product line', value)) as ProductLine;

/**
 * `products` read as product lines: an array whose elements are objects is
 * read line by line; anything else is a drift of the field itself.
 */
function productLines(resource: ResourceName, sent: unknown, drifts: Map<string, Drift>): unknown {
  if (!Array.isArray(sent)) return undefined;
  if (sent.every(isJsonObject)) return sent.map(parseProductLine);
  const odd: unknown = sent.find((line) => !isJsonObject(line));
  drifts.set('products', {
    resource,
    field: 'products',
    kind: 'wrong_type',
    sent: `array holding ${jsonType(odd)}`,
    expected: 'array of objects',
  });
  return sent;
}

export const parseTransaction = (value: unknown): Transaction =>
  readObject('transaction', transactionSchema.shape, requireObject('transaction', value), (field, sent, drifts) =>
    field === 'products' ? productLines('transaction', sent, drifts) : undefined,
  ) as Transaction;

export interface VendingReadOptions {
  /**
   * Whether `products` is the flat view, read as product lines; otherwise its
   * shape is the planogram's, not shown in the contract, and it is carried as received.
   */
  flatProducts?: boolean;
}

export const parseVending = (value: unknown, options: VendingReadOptions = {}): Vending =>
  readObject('vending', vendingSchema.shape, requireObject('vending', value), (field, sent, drifts) =>
    field === 'products' && options.flatProducts === true ? productLines('vending', sent, drifts) : undefined,
  ) as Vending;

export function parseVendingList(value: unknown, options: VendingReadOptions = {}): Vending[] {
  if (!Array.isArray(value)) throw new ContractViolation('vending list', ['(root): expected an array']);
  return value.map((vending) => parseVending(vending, options));
}
