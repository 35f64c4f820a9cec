import fc from 'fast-check';
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
} from 'graphql';
import { schema } from '../../src/graphql/schema.js';
import { anyText, idLike, jsonValue, mostly, nestedJsonText } from './arbitraries.js';

/*
 * Random GraphQL documents and request bodies for the property tests, walked from the live
 * schema: its real types, fields and arguments, mostly with literals of the
 * right type, plus noise (unknown names, aliases, wrong-typed and variable
 * arguments, inline fragments, spreads of fragments that may be missing or
 * cyclic, directives, introspection).
 */

// ---------------------------------------------------------------------------
// Literals.

export const name = fc.stringMatching(/^[_A-Za-z][_0-9A-Za-z]{0,8}$/);
/** Variables an operation may declare (some of them, maybe mistyped) and use anywhere. */
export const VARIABLES: Record<string, string> = {
  id: 'ID!',
  ids: '[ID!]!',
  p: 'ProductsView',
  n: 'Int',
  j: 'JSONObject',
  s: 'String',
  f: 'VendingFilter',
};
const stringLiteral = idLike.map((s) => JSON.stringify(s));
const floatLiteral = fc.double({ noNaN: true, noDefaultInfinity: true }).map(String);
const anyLiteral: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer().map(String),
    fc.constantFrom('2147483648', '-99999999999999999999', '1e400', '-0.0'),
    floatLiteral,
    stringLiteral,
    anyText(12).map((s) => `"""${s}"""`),
    fc.constantFrom(
      'true',
      'false',
      'null',
      'FLAT',
      'PLANOGRAM',
      'LEGACY',
      'nope',
      ...Object.keys(VARIABLES).map((v) => `$${v}`),
      '$undeclared',
    ),
    fc.array(tie('value'), { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
    fc.array(fc.tuple(name, tie('value')), { maxLength: 3 }).map((kv) => `{${kv.map(([k, v]) => `${k}: ${v}`).join(', ')}}`),
  ),
})).value;

/** JSON as a GraphQL literal (for the JSON scalars): no variables. */
const objectLiteral = (value: fc.Arbitrary<string>) =>
  fc.array(fc.tuple(name, value), { maxLength: 3 }).map((kv) => `{${kv.map(([k, v]) => `${k}: ${v}`).join(', ')}}`);
const jsonLiteral: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer().map(String),
    stringLiteral,
    fc.constantFrom('true', 'false', 'null'),
    fc.array(tie('value'), { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
    objectLiteral(tie('value')),
  ),
})).value;

const scalarLiteral = (scalar: string): fc.Arbitrary<string> =>
  ({
    ID: fc.oneof(stringLiteral, fc.integer().map(String)),
    String: stringLiteral,
    Int: fc.integer({ min: -5, max: 600 }).map(String),
    Float: floatLiteral,
    Boolean: fc.constantFrom('true', 'false'),
    DateTime: fc.date({ noInvalidDate: true }).map((d) => JSON.stringify(d.toISOString())),
    JSON: jsonLiteral,
    JSONObject: objectLiteral(jsonLiteral),
  })[scalar] ?? anyLiteral;

/** A literal of `type`; when noisy, sometimes any literal at all (of the wrong type, or a variable). */
function literalFor(type: GraphQLInputType, noisy: boolean, depth = 0): fc.Arbitrary<string> {
  const right = rightLiteral(type, noisy, depth);
  return noisy ? fc.oneof({ weight: 4, arbitrary: right }, { weight: 1, arbitrary: anyLiteral }) : right;
}

function rightLiteral(type: GraphQLInputType, noisy: boolean, depth: number): fc.Arbitrary<string> {
  if (isNonNullType(type)) return rightLiteral(type.ofType, noisy, depth);
  if (isListType(type)) return fc.array(literalFor(type.ofType, noisy, depth + 1), { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`);
  if (isEnumType(type)) return fc.constantFrom(...type.getValues().map((v) => v.name));
  if (isInputObjectType(type)) {
    return fc
      .subarray(Object.values(type.getFields()))
      .chain((fields) =>
        fc
          .tuple(...fields.map((f) => literalFor(f.type, noisy, depth + 1).map((v) => `${f.name}: ${v}`)))
          .map((kv) => `{${kv.join(', ')}}`),
      );
  }
  return scalarLiteral(type.name);
}

// ---------------------------------------------------------------------------
// Documents: clean ones (valid, so they execute) and noisy ones.

const objectTypes = Object.values(schema.getTypeMap()).filter((t): t is GraphQLObjectType => isObjectType(t) && !t.name.startsWith('__'));
const allFieldNames = [...new Set(objectTypes.flatMap((t) => Object.keys(t.getFields())))];
const noiseField = fc
  .tuple(fc.oneof(fc.constantFrom(...allFieldNames), name), fc.option(anyLiteral, { freq: 3 }), fc.boolean())
  .map(([field, arg, sub]) => `${field}${arg === null ? '' : `(id: ${arg})`}${sub ? ' { __typename status }' : ''}`);
const specials = fc.constantFrom(
  '__typename',
  'a: __typename',
  '...F',
  '...G',
  '...Missing',
  '__schema { types { name } }',
  '__type(name: "Vending") { fields { name } }',
  'status @skip(if: $s)',
  '__typename @include(if: true)',
);

const selections = new Map<string, fc.Arbitrary<string>>();
function selectionSet(type: GraphQLObjectType, depth: number, noisy: boolean): fc.Arbitrary<string> {
  const key = `${type.name}/${depth}/${noisy}`;
  const known = selections.get(key);
  if (known) return known;
  const field = fc.constantFrom(...Object.values(type.getFields())).chain((f) => fieldSelection(f, depth, noisy));
  const inline = fc
    .constantFrom(...objectTypes, undefined)
    .chain((t) =>
      t && depth > 0
        ? selectionSet(t, depth - 1, noisy).map((s) => `... on ${t.name} ${s}`)
        : fc.constant(`... on ${t?.name ?? 'Nope'} { __typename }`),
    );
  const item = noisy
    ? fc.oneof(
        { weight: 10, arbitrary: field },
        { weight: 1, arbitrary: noiseField },
        { weight: 1, arbitrary: specials },
        { weight: 1, arbitrary: inline },
      )
    : fc.oneof({ weight: 10, arbitrary: field }, { weight: 1, arbitrary: fc.constant('__typename') });
  const set = fc.array(item, { minLength: 1, maxLength: 4 }).map((items) => `{ ${items.join(' ')} }`);
  selections.set(key, set);
  return set;
}

function fieldSelection(field: GraphQLField<unknown, unknown>, depth: number, noisy: boolean): fc.Arbitrary<string> {
  const args = noisy ? fc.oneof({ weight: 4, arbitrary: fc.constant(field.args) }, fc.subarray([...field.args])) : fc.constant(field.args);
  const literals = args.chain((as) => fc.tuple(...as.map((a) => literalFor(a.type, noisy).map((v) => `${a.name}: ${v}`))));
  const extra = noisy
    ? fc.option(
        fc.tuple(name, anyLiteral).map(([n, v]) => `${n}: ${v}`),
        { freq: 8 },
      )
    : fc.constant(null);
  const named = getNamedType(field.type);
  const right = isObjectType(named) ? (depth > 0 ? selectionSet(named, depth - 1, noisy) : fc.constant('{ __typename }')) : fc.constant('');
  const sub = noisy ? fc.oneof({ weight: 9, arbitrary: right }, fc.constant(isObjectType(named) ? '' : '{ status }')) : right;
  return fc.tuple(fc.option(name, { freq: 4 }), literals, extra, sub).map(([alias, lits, more, s]) => {
    const all = more === null ? lits : [...lits, more];
    return `${alias === null ? '' : `${alias}: `}${field.name}${all.length > 0 ? `(${all.join(', ')})` : ''} ${s}`;
  });
}

const roots = { query: schema.getQueryType()!, mutation: schema.getMutationType()!, subscription: schema.getSubscriptionType()! };
const variableDefinitions = fc
  .tuple(fc.subarray(Object.entries(VARIABLES)), fc.constantFrom('', '', '', '', '$id: Vending', '$n: Int = "x"', '$id: ID!', '$: ID'))
  .map(([defs, odd]) => [...defs.map(([v, t]) => `$${v}: ${t}`), ...(odd ? [odd] : [])].join(', '));
const noisyOperation = fc
  .constantFrom('query', 'query', 'query', 'mutation', 'subscription', '')
  .chain((op) =>
    fc
      .tuple(fc.option(name), variableDefinitions, selectionSet(roots[op === '' ? 'query' : op], 3, true))
      .map(([n, vars, set]) => (op === '' ? set : `${op}${n === null ? '' : ` ${n}`}${vars ? `(${vars})` : ''} ${set}`)),
  );
const fragment = fc
  .tuple(fc.constantFrom('F', 'G'), fc.constantFrom(...objectTypes))
  .chain(([n, t]) => selectionSet(t, 1, true).map((s) => `fragment ${n} on ${t.name} ${s}`));
const noisyDocument = fc
  .tuple(
    fc.oneof({ weight: 4, arbitrary: noisyOperation.map((op) => [op]) }, fc.array(noisyOperation, { minLength: 2, maxLength: 3 })),
    fc.array(fragment, { maxLength: 2 }),
  )
  .map(([ops, fragments]) => [...ops, ...fragments].join('\n'));
/** One valid query or mutation: it executes, against real and unknown ids. */
const cleanDocument = fc
  .constantFrom('query' as const, 'query' as const, 'mutation' as const)
  .chain((op) => selectionSet(roots[op], 3, false).map((set) => `${op} ${set}`));

export const document = fc.oneof(cleanDocument, noisyDocument);

// ---------------------------------------------------------------------------
// Request bodies.

/**
 * Nesting of selections and literals the main property draws from. Before the
 * gateway bounded nesting, a cold process's parser overflowed at ~1500 levels
 * of `{a: …}`, ~1900 of `[…]`, ~2000 of `a { … }`; the first property below
 * sends such documents.
 */
const SAFE_DEPTH = 700;
const deep = fc.integer({ min: 1, max: SAFE_DEPTH });
const many = fc.integer({ min: 1, max: 2_000 });
const garbage = fc.oneof(
  anyText(200),
  fc
    .tuple(document, fc.nat(), fc.nat({ max: 10 }), anyText(5))
    .map(([d, at, cut, insert]) => d.slice(0, at % (d.length + 1)) + insert + d.slice((at % (d.length + 1)) + cut)),
  deep.map((n) => `{ ${'a { '.repeat(n)}b${' }'.repeat(n)} }`),
  deep.map((n) => `{ transaction(id: ${'['.repeat(n)}"x"${']'.repeat(n)}) { status } }`),
  deep.map((n) => `{ vendings(filter: ${'{status: '.repeat(n)}"x"${'}'.repeat(n)}) { totalCount } }`),
  many.map((n) => `{ ${'vendings { nodes { products { productId } } } '.repeat(Math.min(n, 500))}}`),
  many.map((n) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`),
  many.map((n) => `{ transactions(ids: [${Array.from({ length: Math.min(n, 1_000) }, (_, i) => `"t${i}"`).join(',')}]) { status } }`),
  many.map((n) => `{ ${'...F '.repeat(Math.min(n, 1_000))}} fragment F on Query { __typename ...G } fragment G on Query { ...F }`),
  many.map((n) => '{'.repeat(n)),
);

const variables = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        id: mostly(idLike),
        ids: mostly(fc.array(idLike, { maxLength: 3 })),
        p: mostly(fc.constantFrom('FLAT', 'PLANOGRAM', 'flat')),
        n: mostly(fc.integer()),
        j: fc.oneof(
          jsonValue,
          nestedJsonText.map((text) => ({ nested: JSON.parse(text) as unknown })),
        ),
        s: mostly(anyText(8)),
        f: jsonValue,
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: jsonValue },
);
/** A POST /graphql body: mostly documents with variables, sometimes garbage, wrong types or not JSON at all. */
export const graphqlPayload = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .record(
        {
          query: fc.oneof({ weight: 4, arbitrary: document }, { weight: 1, arbitrary: garbage }),
          variables,
          operationName: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: name }),
        },
        { requiredKeys: ['query'] },
      )
      .map((p) => JSON.stringify(p)),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ query: jsonValue, variables: jsonValue, extensions: jsonValue }, { requiredKeys: [] })
      .map((p) => JSON.stringify(p)),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(
      anyText(100),
      jsonValue.map((v) => JSON.stringify(v)),
    ),
  },
);
