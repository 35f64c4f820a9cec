import { type GraphQLError, Kind, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode, OperationTypeNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { refuseOperation } from '../refusals/operation-refusals.js';

/*
 * A subscription has exactly one root field, and it must always run: the
 * GraphQL spec's draft forbids `@skip` and `@include` in a subscription's top
 * level selection ("Single root field"). graphql-js 16 does not check it, and
 * its subscribe then finds no field to subscribe to and throws a TypeError
 * ("undefined is not iterable"), which every transport answered as an
 * unexpected error (HTTP 500). Refused while validating, it is the client's
 * error on every transport.
 */

const CONDITIONAL = new Set(['skip', 'include']);

/** The problems of `document`'s subscriptions: each selection of a top level, through its fragments, without `@skip` / `@include`. */
export function subscriptionRootProblems(document: DocumentNode): GraphQLError[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const problems: GraphQLError[] = [];
  for (const operation of document.definitions) {
    if (operation.kind !== Kind.OPERATION_DEFINITION || operation.operation !== OperationTypeNode.SUBSCRIPTION) continue;
    const visited = new Set<string>();
    const check = (selectionSet: SelectionSetNode): void => {
      for (const selection of selectionSet.selections) {
        if (selection.directives?.some((directive) => CONDITIONAL.has(directive.name.value))) {
          problems.push(refuseOperation.conditionalSubscriptionRoot(operation.name?.value, selection));
        }
        if (selection.kind === Kind.INLINE_FRAGMENT) check(selection.selectionSet);
        if (selection.kind === Kind.FRAGMENT_SPREAD && !visited.has(selection.name.value)) {
          visited.add(selection.name.value);
          const fragment = fragments.get(selection.name.value);
          if (fragment) check(fragment.selectionSet);
        }
      }
    };
    check(operation.selectionSet);
  }
  return problems;
}

/**
 * The rule as a yoga plugin, for the list of operation rules. Checked before
 * validation rather than as one of its rules: graphql-js's own "single root
 * field" rule evaluates these directives without the variables and throws
 * when one reads a required variable, which would end validation first.
 */
export const useSubscriptionRootCondition = (): Plugin => ({
  onValidate({ params, setResult }) {
    const problems = subscriptionRootProblems(params.documentAST);
    if (problems.length > 0) setResult(problems);
  },
});
