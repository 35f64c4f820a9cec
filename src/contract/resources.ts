import { z } from 'zod';

/*
 * The REST contract's resources (seed part 2). Only identifier fields are
 * required: the contract does not say which others are (part 2, "Gaps"), so a
 * known field is checked for its type when present and may be absent or null.
 * Objects are loose: fields the gateway does not know are kept as received, so
 * whatever passes through the gateway arrives whole.
 */

const text = z.string().nullish();
const decimal = z.number().nullish();

export const productLineSchema = z.looseObject({
  productId: z.string(),
  productName: text,
  productPrice: decimal,
  productThumbnail: text,
  productSku: text,
  quantity: decimal,
});

export const transactionSchema = z.looseObject({
  transactionId: z.string(),
  customerId: text,
  products: z.array(productLineSchema),
  status: z.string(),
});

/**
 * `products` on a vending has a shape that depends on the `products` query
 * parameter (part 4); the planogram shape is "not shown", so it is carried as
 * received and only read as product lines in the flat view.
 */
export const vendingSchema = z.looseObject({
  vendingId: z.string(),
  status: text,
  online: z.boolean().nullish(),
  enabled: z.boolean().nullish(),
  address: text,
  building: text,
  countryCode: text,
  currencyCode: text,
  identifier: text,
  posId: text,
  products: z.unknown().optional(),
});

/** Payment update request body (part 2): a JSON object whose fields are not shown. */
export const paymentUpdateSchema = z.record(z.string(), z.unknown());

export type ProductLine = z.infer<typeof productLineSchema>;
export type Transaction = z.infer<typeof transactionSchema>;
export type Vending = z.infer<typeof vendingSchema>;
export type PaymentUpdate = z.infer<typeof paymentUpdateSchema>;
