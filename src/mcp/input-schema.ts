import {
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  TypeInfo,
  typeFromAST,
  valueFromAST,
  visit,
  visitWithTypeInfo,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';

/*
 * A tool's input schema, made from its operation: one property per
 * variable, typed by the variable's GraphQL type, and described with the
 * words the schema already has for the argument the variable is passed to
 * (or for its type). Nothing is written per tool, so a new operation in
 * schema/operations/ documents itself, and the schema's descriptions are the
 * one source of what an argument means.
 */

/** The JSON Schema subset tools' inputs use (draft 2020-12 keywords only). */
export interface JsonSchema {
  type?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: string[];
  format?: string;
  default?: unknown;
  additionalProperties?: boolean;
}

/** How the gateway's scalars read in JSON (ID is a string; a number is taken too, as GraphQL takes one). */
const SCALARS: Record<string, JsonSchema> = {
  ID: { type: 'string' },
  String: { type: 'string' },
  Int: { type: 'integer' },
  Float: { type: 'number' },
  Boolean: { type: 'boolean' },
  DateTime: { type: 'string', format: 'date-time' },
  JSONObject: { type: 'object' },
  // JSON is any value: no `type`.
  JSON: {},
};

/** Input objects nest; a self-referring one stops here rather than looping. */
const MAX_NESTING = 5;

function described(schema: JsonSchema, description: string | null | undefined): JsonSchema {
  return description ? { ...schema, description } : schema;
}

/** The JSON Schema of a GraphQL input type (nullability is said by `required` of the object holding it). */
export function jsonSchemaOf(type: GraphQLInputType, depth = 0): JsonSchema {
  if (isNonNullType(type)) return jsonSchemaOf(type.ofType, depth);
  if (isListType(type)) return { type: 'array', items: jsonSchemaOf(type.ofType, depth) };
  if (isEnumType(type)) {
    const values = type.getValues();
    const meanings = values.filter((value) => value.description).map((value) => `${value.name}: ${value.description}`);
    return described(
      { type: 'string', enum: values.map((value) => value.name) },
      [type.description, ...meanings].filter(Boolean).join(' '),
    );
  }
  if (isInputObjectType(type)) {
    if (depth >= MAX_NESTING) return described({ type: 'object' }, type.description);
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const field of Object.values(type.getFields())) {
      const schema = described(jsonSchemaOf(field.type, depth + 1), field.description);
      properties[field.name] = field.defaultValue === undefined ? schema : { ...schema, default: field.defaultValue };
      if (isNonNullType(field.type) && field.defaultValue === undefined) required.push(field.name);
    }
    return described(
      { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false },
      type.description,
    );
  }
  if (isScalarType(type)) return described(SCALARS[type.name] ?? {}, SCALARS[type.name] ? undefined : type.description);
  return {};
}

/** For each variable, the description of the first argument it is passed to. */
function usesOf(schema: GraphQLSchema, operation: OperationDefinitionNode): Map<string, string> {
  const found = new Map<string, string>();
  const typeInfo = new TypeInfo(schema);
  visit(
    operation,
    visitWithTypeInfo(typeInfo, {
      // A variable's own definition is no use of it.
      VariableDefinition: () => false,
      Variable(node) {
        const name = node.name.value;
        const description = typeInfo.getArgument()?.description;
        if (!found.has(name) && description) found.set(name, description);
      },
    }),
  );
  return found;
}

/** The input schema of an operation's tool: an object of its variables; those of a non-null type without a default are required. */
export function inputSchemaOf(schema: GraphQLSchema, operation: OperationDefinitionNode): JsonSchema & { type: 'object' } {
  const uses = usesOf(schema, operation);
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type as never) as GraphQLInputType | undefined;
    if (!type) continue;
    // Built-in scalars' descriptions say what any ID or Int is: the argument's words, or the type's own (enums, input objects).
    let property = described(jsonSchemaOf(type), uses.get(name));
    if (definition.defaultValue) property = { ...property, default: valueFromAST(definition.defaultValue, type) };
    properties[name] = property;
    if (isNonNullType(type) && !definition.defaultValue) required.push(name);
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}
