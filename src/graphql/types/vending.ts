import { vendingCurrency } from '../../contract/currency.js';
import {
  ContractViolation,
  driftOf,
  parseProductLine,
  vendingSchema,
  wasRead,
  type ProductLine,
  type Vending,
} from '../../contract/contract.js';
import type { GatewayContext } from '../context.js';
import { refuse } from '../../refusals/refusals.js';
import { builder } from '../builder.js';
import { extraFieldOptions } from '../extra-fields.js';
import { exactly, fieldsOf, rootFieldsOf, type Sdl } from '../field-check.js';
import { ProductLineRef, VendingRef, type ProductsViewValue } from '../refs.js';
import { paginate, VendingConnectionRef, VendingFilterInput } from './vending-connection.js';
import { requireId } from './transaction.js';
import { served, servedOrNull } from '../served-fields.js';

export const ProductsView = builder.enumType('ProductsView', {
  description: "How a vending's products are returned: the `products` query parameter of the contract (part 4).",
  values: exactly<Sdl.ProductsView>()({
    FLAT: { value: 'FLAT', description: 'A flat list of product lines, in Vending.products.' },
    PLANOGRAM: {
      value: 'PLANOGRAM',
      description: "The machine's planogram, in Vending.planogram, as the service sent it (its shape is not shown in the contract).",
    },
  } as const),
});

/** The upstream value of `products` for a view; an empty configured value means "send none". */
export function productsParam(ctx: GatewayContext, view: ProductsViewValue): string | undefined {
  const value = view === 'FLAT' ? ctx.productsValues.flat : ctx.productsValues.planogram;
  return value === '' ? undefined : value;
}

function flatProducts({ vending, view }: { vending: Vending; view: ProductsViewValue }) {
  const products: unknown = served(vending, 'products');
  if (view !== 'FLAT' || !Array.isArray(products)) return null;
  try {
    // Lines the REST backend read already carry their drifts; the memory backend's are read here.
    return products.map((line: unknown) =>
      typeof line === 'object' && line !== null && wasRead(line) ? (line as ProductLine) : parseProductLine(line),
    );
  } catch (error) {
    if (error instanceof ContractViolation) throw refuse.vendingOffContract(vending.vendingId, error.message);
    throw error;
  }
}

const unreadableId = (vending: Vending): boolean => {
  const drift = driftOf(vending, 'vendingId');
  return drift !== undefined && drift.kind !== 'converted';
};

const optional = <T>(value: T | null | undefined): T | null => value ?? null;

VendingRef.implement({
  description: 'A vending machine (contract part 2, "Vending").',
  fields: (t) =>
    fieldsOf<Sdl.Vending>()({
      id: t.id({
        description:
          "The key normalized client caches use without configuration (Apollo Client's InMemoryCache, urql's Graphcache): the " +
          'vendingId itself, in both views: select `products` and `productCount` only in the FLAT view and `planogram` only in the ' +
          'PLANOGRAM view (each is null in the other), or a cache holding both views of one vending has them overwrite each other.',
        resolve: ({ vending }) => served(vending, 'vendingId'),
      }),
      vendingId: t.id({
        description: 'Identifier of the vending (UUID-shaped string).',
        resolve: ({ vending }) => served(vending, 'vendingId'),
      }),
      status: t.string({
        nullable: true,
        description: 'State of the machine; the allowed values are not shown in the contract.',
        resolve: ({ vending }) => servedOrNull(vending, 'status'),
      }),
      online: t.boolean({
        nullable: true,
        description: 'Whether the machine is connected; independent of `enabled`.',
        resolve: ({ vending }) => servedOrNull(vending, 'online'),
      }),
      enabled: t.boolean({
        nullable: true,
        description: 'Whether the machine is enabled for sales; independent of `online`.',
        resolve: ({ vending }) => servedOrNull(vending, 'enabled'),
      }),
      address: t.string({
        nullable: true,
        description: 'Street address of the machine.',
        resolve: ({ vending }) => servedOrNull(vending, 'address'),
      }),
      building: t.string({
        nullable: true,
        description: 'Building or spot where the machine stands.',
        resolve: ({ vending }) => servedOrNull(vending, 'building'),
      }),
      countryCode: t.string({
        nullable: true,
        description: 'Country of the machine, as the service codes it (e.g. "DE").',
        resolve: ({ vending }) => servedOrNull(vending, 'countryCode'),
      }),
      currencyCode: t.string({
        nullable: true,
        description:
          'Currency of the machine\'s prices (e.g. "EUR"), as the service sends it (its case, or a code that is not three letters, ' +
          'kept): `currency` is the one its sales are counted in.',
        resolve: ({ vending }) => servedOrNull(vending, 'currencyCode'),
      }),
      currency: t.string({
        description:
          "Computed by the gateway: the currency the machine's prices and sales are counted in (ISO 4217, upper case): its " +
          '`currencyCode` when that is three letters, else DEFAULT_CURRENCY (a code missing, numeric or otherwise unreadable). The ' +
          'same rule decides the currency of a transaction that names this machine.',
        resolve: ({ vending }, _args, ctx) => vendingCurrency((vending as Record<string, unknown>).currencyCode, ctx.defaultCurrency),
      }),
      identifier: t.string({
        nullable: true,
        description: 'Operator-facing name of the machine.',
        resolve: ({ vending }) => servedOrNull(vending, 'identifier'),
      }),
      posId: t.id({
        nullable: true,
        description: "Identifier of the machine's point of sale (UUID-shaped string).",
        resolve: ({ vending }) => servedOrNull(vending, 'posId'),
      }),
      products: t.field({
        type: [ProductLineRef],
        nullable: true,
        description: 'Products as a flat list: set in the FLAT view, null in the PLANOGRAM view.',
        resolve: flatProducts,
      }),
      productCount: t.int({
        nullable: true,
        description:
          'How many product lines the machine has in the FLAT view; null in the PLANOGRAM view, whose shape the gateway does not read.',
        resolve: ({ vending, view }) => (view === 'FLAT' && Array.isArray(vending.products) ? vending.products.length : null),
      }),
      planogram: t.field({
        type: 'JSON',
        nullable: true,
        description:
          'The `products` value the service sent in the PLANOGRAM view, unchanged (its shape is not shown in the contract); null in ' +
          'the FLAT view.',
        resolve: ({ vending, view }) => (view === 'PLANOGRAM' ? optional(vending.products) : null),
      }),
      offlineSince: t.field({
        type: 'DateTime',
        nullable: true,
        description:
          'Since when the gateway sees the machine offline: its first read of the machine offline (VENDING_POLL_MS), as ' +
          '`vendingUpdated` published it; null while online, or when this gateway has not read the machine since it went offline (it ' +
          'started later; the next change tells).',
        resolve: async ({ vending }, _args, ctx) => {
          if (vending.online !== false) return null;
          const since = ctx.vendingStates.offlineSince(await ctx.accountAccess.historyAccount(ctx.credential), String(vending.vendingId));
          return since === undefined ? null : new Date(since);
        },
      }),
      extra: t.field(extraFieldOptions(vendingSchema, ({ vending }) => vending)),
    }),
});

builder.queryFields((t) =>
  rootFieldsOf<Sdl.Query>()({
    vending: t.field({
      type: VendingRef,
      nullable: true,
      description: 'One vending by id (GET /vendings/{id}); null with a NOT_FOUND error when unknown.',
      args: {
        id: t.arg.id({ required: true, description: 'The vendingId.' }),
        products: t.arg({ type: ProductsView, required: true, defaultValue: 'FLAT', description: 'Which form of products to read.' }),
      },
      resolve: async (_root, { id, products }, ctx) => {
        const vending = await ctx.loaders.vendingById(productsParam(ctx, products)).load(requireId(id, 'id'));
        return { vending, view: products };
      },
    }),
    vendings: t.field({
      type: VendingConnectionRef,
      description:
        'Every vending of the account (GET /vendings), filtered and paged by the gateway: the contract has no paging of its own.',
      args: {
        products: t.arg({ type: ProductsView, required: true, defaultValue: 'FLAT', description: 'Which form of products to read.' }),
        filter: t.arg({ type: VendingFilterInput, description: 'Only vendings matching every field given.' }),
        first: t.arg.int({ description: 'Page size; all remaining vendings when omitted.' }),
        after: t.arg.string({ description: 'Cursor of the last vending of the previous page (PageInfo.endCursor).' }),
      },
      resolve: async (_root, { products, filter, first, after }, ctx) => {
        const all = await ctx.loaders.listVendings(productsParam(ctx, products));
        // A vending the service sent without a readable vendingId cannot be a node (its id is non-null and its
        // cursor), and its error would null the whole connection: it is left out, as its drift is counted and logged.
        const views = all.filter((vending) => !unreadableId(vending)).map((vending) => ({ vending, view: products }));
        return paginate(views, filter ?? undefined, first ?? undefined, after ?? undefined);
      },
    }),
  }),
);
