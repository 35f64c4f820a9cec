import { productLineSchema } from '../../contract/contract.js';
import { lineTotal } from '../line-totals.js';
import { extraFieldOptions } from '../extra-fields.js';
import { fieldsOf, type Sdl } from '../field-check.js';
import { ProductLineRef } from '../refs.js';
import { served, servedAmounts, servedOrNull } from '../served-fields.js';

ProductLineRef.implement({
  description: 'One product of a transaction, a vending or a webhook (contract part 2, "Product line").',
  fields: (t) =>
    fieldsOf<Sdl.ProductLine>()({
      productId: t.id({ description: 'Identifier of the product (UUID-shaped string).', resolve: (p) => served(p, 'productId') }),
      productName: t.string({
        nullable: true,
        description: 'Display name of the product.',
        resolve: (p) => servedOrNull(p, 'productName'),
      }),
      productPrice: t.float({
        nullable: true,
        description: 'Unit price, a decimal in the currency of the vending.',
        resolve: (p) => servedOrNull(p, 'productPrice'),
      }),
      productThumbnail: t.string({
        nullable: true,
        description: 'URL of a picture of the product.',
        resolve: (p) => servedOrNull(p, 'productThumbnail'),
      }),
      productSku: t.string({
        nullable: true,
        description: 'Stock keeping unit of the product.',
        resolve: (p) => servedOrNull(p, 'productSku'),
      }),
      quantity: t.float({
        nullable: true,
        description: 'How many: items sold in a transaction, items stocked on a vending.',
        resolve: (p) => servedOrNull(p, 'quantity'),
      }),
      lineTotal: t.float({
        nullable: true,
        description: 'Computed by the gateway: productPrice × quantity (a missing quantity counts as 1); null without a price.',
        resolve: (p) => lineTotal(servedAmounts([p])[0]!),
      }),
      extra: t.field(extraFieldOptions(productLineSchema, (p) => p)),
    }),
});
