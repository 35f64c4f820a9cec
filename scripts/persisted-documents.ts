import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kind, parse, print, visit, type DefinitionNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';

/*
 * The trusted-documents manifest: { sha256(document text): document text },
 * one entry per operation of schema/operations/, each with the fragments it
 * uses, the format persisted-operation clients and servers share.
 */

function fragmentsUsedBy(node: DefinitionNode, fragments: Map<string, FragmentDefinitionNode>, seen = new Set<string>()): Set<string> {
  visit(node, {
    FragmentSpread(spread) {
      const name = spread.name.value;
      if (seen.has(name)) return;
      seen.add(name);
      const fragment = fragments.get(name);
      if (fragment) fragmentsUsedBy(fragment, fragments, seen);
    },
  });
  return seen;
}

export function buildPersistedDocuments(operationsDir: string): Record<string, string> {
  const definitions = readdirSync(operationsDir)
    .filter((file) => file.endsWith('.graphql'))
    .sort()
    .flatMap((file) => parse(readFileSync(join(operationsDir, file), 'utf8')).definitions);
  const fragments = new Map(
    definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]),
  );
  const manifest: Record<string, string> = {};
  for (const operation of definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)) {
    const used = [...fragmentsUsedBy(operation, fragments)].sort().map((name) => fragments.get(name) as FragmentDefinitionNode);
    const text = print({ kind: Kind.DOCUMENT, definitions: [operation, ...used] });
    manifest[createHash('sha256').update(text).digest('hex')] = text;
  }
  return manifest;
}
