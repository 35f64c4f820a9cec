import type { z } from 'zod';
import {
  productLineSchema,
  transactionSchema,
  vendingSchema,
  type ProductLine,
  type Transaction,
  type Vending,
} from './resources.js';

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

function describe(issue: z.core.$ZodIssue): string {
  const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  return `${path}: ${issue.message}`;
}

function parseWith<T>(schema: z.ZodType<T>, what: string, value: unknown): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ContractViolation(what, result.error.issues.map(describe));
  return result.data;
}

export const parseTransaction = (value: unknown): Transaction =>
  parseWith(transactionSchema, 'transaction', value);

export const parseVending = (value: unknown): Vending => parseWith(vendingSchema, 'vending', value);

export const parseProductLine = (value: unknown): ProductLine =>
  parseWith(productLineSchema, 'product line', value);

export function parseVendingList(value: unknown): Vending[] {
  if (!Array.isArray(value)) throw new ContractViolation('vending list', ['(root): expected an array']);
  return value.map(parseVending);
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
