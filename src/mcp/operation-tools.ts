import { readdirSync, readFileSync } from 'node:fs';
import {
  Kind,
  OperationTypeNode,
  parse,
  TokenKind,
  type DocumentNode,
  type FieldNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type Token,
} from 'graphql';
import { DEFAULT_MANIFEST } from '../graphql/trusted-documents.js';
import { inputSchemaOf, type JsonSchema } from './input-schema.js';

/*
 * The tools are the dashboard's operations: the trusted documents of
 * schema/operations/ (their manifest, schema/persisted-documents.json, is
 * what TRUSTED_DOCUMENTS=only runs), each query a tool and the payment
 * mutation one more with MCP=read+pay. Subscriptions are no tools: a tool
 * call has one answer. A tool runs its document as it is, never a document
 * of the caller's, so an assistant can ask only what the dashboard asks.
 */

export type ToolKind = 'query' | 'mutation';

export interface OperationTool {
  /** The operation's name in snake_case (`TransactionDetail` → `transaction_detail`). */
  name: string;
  /** The operation's own name, as the dashboard and the metrics call it. */
  title: string;
  /** The comment above the operation, then what the schema says of each root field it reads. */
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  kind: ToolKind;
  operationName: string;
  /** The trusted document's text (the operation and its fragments) and its sha256, the manifest's key. */
  document: string;
  hash: string;
}

export interface OperationToolsOptions {
  /** @default schema/persisted-documents.json */
  manifest?: URL | undefined;
  /** Where the operations' files are, for their comments. @default schema/operations/ beside the manifest */
  operationsDir?: URL | undefined;
}

const snakeCase = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/** The `#` lines right above a definition (graphql-js keeps comments in its token chain, not in the AST). */
function commentAbove(start: Token): string {
  const lines: string[] = [];
  for (let token = start.prev; token?.kind === TokenKind.COMMENT; token = token.prev) lines.unshift((token.value ?? '').trim());
  return lines.join(' ');
}

/** Each operation's comment by name, from the files of the operations' folder. */
function commentsOf(dir: URL): Map<string, string> {
  const comments = new Map<string, string>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.graphql'))) {
    const document = parse(readFileSync(new URL(file, dir), 'utf8'));
    for (const definition of document.definitions) {
      if (definition.kind !== Kind.OPERATION_DEFINITION || !definition.name || !definition.loc) continue;
      const comment = commentAbove(definition.loc.startToken);
      if (comment) comments.set(definition.name.value, comment);
    }
  }
  return comments;
}

/** What the schema says of the root fields an operation reads or changes. */
function rootFieldsDescribed(schema: GraphQLSchema, operation: OperationDefinitionNode): string[] {
  const root = operation.operation === OperationTypeNode.MUTATION ? schema.getMutationType() : schema.getQueryType();
  const fields = root?.getFields() ?? {};
  return operation.selectionSet.selections
    .filter((selection): selection is FieldNode => selection.kind === Kind.FIELD)
    .map((field) => {
      const description = fields[field.name.value]?.description;
      return description ? `\`${field.name.value}\`: ${description}` : '';
    })
    .filter(Boolean);
}

const PAY_NOTE = 'Changes data at the service; only a key or token with the `pay` permission may call it.';

function toolOf(schema: GraphQLSchema, hash: string, document: string, comments: Map<string, string>): OperationTool | undefined {
  const parsed: DocumentNode = parse(document);
  const operation = parsed.definitions.find(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  if (!operation?.name || operation.operation === OperationTypeNode.SUBSCRIPTION) return undefined;
  const operationName = operation.name.value;
  const kind: ToolKind = operation.operation === OperationTypeNode.MUTATION ? 'mutation' : 'query';
  const description = [comments.get(operationName), ...rootFieldsDescribed(schema, operation), kind === 'mutation' ? PAY_NOTE : '']
    .filter(Boolean)
    .join('\n');
  return {
    name: snakeCase(operationName),
    title: operationName,
    description,
    inputSchema: inputSchemaOf(schema, operation),
    kind,
    operationName,
    document,
    hash,
  };
}

/** Every operation of the trusted documents that can be a tool, by name order. */
export function loadOperationTools(schema: GraphQLSchema, options: OperationToolsOptions = {}): OperationTool[] {
  const manifest = options.manifest ?? DEFAULT_MANIFEST;
  const documents = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, string>;
  const comments = commentsOf(options.operationsDir ?? new URL('operations/', manifest));
  return Object.entries(documents)
    .map(([hash, document]) => toolOf(schema, hash, document, comments))
    .filter((tool): tool is OperationTool => tool !== undefined)
    .sort((a, b) => a.name.localeCompare(b.name));
}
