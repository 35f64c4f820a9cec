import {
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLArgument,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
  OperationTypeNode,
} from 'graphql';

/*
 * The cost of one operation, with its variables known. GraphQL Armor's
 * costLimit (whose units MAX_COST has always been in) sees the document only:
 * `transactions(ids: $ids)` costs the same with 1 id as with 500, so fifty
 * aliases of it bought 25,000 upstream reads. Same units here (a leaf 1, an
 * object 2, each level below weighs 1.5×, a literal `first`/`last` multiplies
 * — Armor's defaults), and a field's cost is also multiplied by the longest
 * list among its list-typed arguments, written in the document or passed as
 * a variable: that length is how many reads the field asks for. (A page size
 * passed as a variable still counts one, as in Armor: paging the vending list
 * reads the same one list upstream, and dashboards page through variables.)
 */

const SCALAR_COST = 1;
const OBJECT_COST = 2;
const DEPTH_FACTOR = 1.5;

export interface CostInput {
  schema: GraphQLSchema;
  operation: OperationDefinitionNode;
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  /** As the client sent them (before coercion): a list variable is an array. */
  variables: Readonly<Record<string, unknown>> | null | undefined;
}

/** The cost, and whether it is `fixed`: no variable's value went into it (the same document always costs the same). */
export function operationCost({ schema, operation, fragments, variables }: CostInput): { cost: number; fixed: boolean } {
  let fixed = true;
  const defaults = new Map(operation.variableDefinitions?.map((definition) => [definition.variable.name.value, definition.defaultValue]));
  const fragmentCosts = new Map<string, number>();

  /** How many items a value stands for: a list's length, else one. */
  function lengthOf(value: ValueNode): number {
    if (value.kind === Kind.LIST) return value.values.length;
    if (value.kind !== Kind.VARIABLE) return 1;
    fixed = false;
    const name = value.name.value;
    if (variables && Object.hasOwn(variables, name)) {
      const given = variables[name];
      return Array.isArray(given) ? given.length : 1;
    }
    const fallback = defaults.get(name);
    return fallback ? lengthOf(fallback) : 1;
  }

  function multiplier(field: FieldNode, args: readonly GraphQLArgument[]): number {
    let most = 1;
    for (const argument of field.arguments ?? []) {
      const name = argument.name.value;
      if ((name === 'first' || name === 'last') && argument.value.kind === Kind.INT)
        most = Math.max(most, Number.parseInt(argument.value.value, 10));
      const definition = args.find((each) => each.name === name);
      if (definition && isListType(getNullableType(definition.type))) most = Math.max(most, lengthOf(argument.value));
    }
    return most;
  }

  function fieldCost(field: FieldNode, parent: GraphQLCompositeType | undefined): number {
    if (field.name.value === '__schema') return 0;
    if (!field.selectionSet) return SCALAR_COST;
    const definition = parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[field.name.value] : undefined;
    const type = definition ? getNamedType(definition.type) : undefined;
    const children = selectionCost(field.selectionSet, type && isCompositeType(type) ? type : undefined);
    return (OBJECT_COST + DEPTH_FACTOR * children) * multiplier(field, definition?.args ?? []);
  }

  /** Fragments spread at this level count as if inlined one level deeper, as in Armor. */
  function selectionCost(selectionSet: SelectionSetNode, parent: GraphQLCompositeType | undefined): number {
    let cost = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        cost += fieldCost(selection, parent);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        cost +=
          OBJECT_COST + DEPTH_FACTOR * selectionCost(selection.selectionSet, conditionType(selection.typeCondition?.name.value) ?? parent);
      } else {
        cost += SCALAR_COST + DEPTH_FACTOR * fragmentCost(selection.name.value);
      }
    }
    return cost;
  }

  /** Validation has refused fragment cycles; each fragment is costed once, however often it is spread. */
  function fragmentCost(name: string): number {
    const known = fragmentCosts.get(name);
    if (known !== undefined) return known;
    const fragment = fragments.get(name);
    fragmentCosts.set(name, 0);
    const cost = fragment
      ? OBJECT_COST + DEPTH_FACTOR * selectionCost(fragment.selectionSet, conditionType(fragment.typeCondition.name.value))
      : 0;
    fragmentCosts.set(name, cost);
    return cost;
  }

  function conditionType(name: string | undefined): GraphQLCompositeType | undefined {
    const type = name === undefined ? undefined : schema.getType(name);
    return type && isCompositeType(type) ? type : undefined;
  }

  const root =
    operation.operation === OperationTypeNode.QUERY
      ? schema.getQueryType()
      : operation.operation === OperationTypeNode.MUTATION
        ? schema.getMutationType()
        : schema.getSubscriptionType();
  let cost = 0;
  for (const selection of operation.selectionSet.selections) {
    cost +=
      selection.kind === Kind.FIELD
        ? fieldCost(selection, root ?? undefined)
        : selectionCost({ kind: Kind.SELECTION_SET, selections: [selection] }, root ?? undefined);
  }
  return { cost, fixed };
}
