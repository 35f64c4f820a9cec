import { idProblem, transactionSchema } from '../../contract/contract.js';
import { refuse } from '../../refusals/refusals.js';
import { requirePermission } from '../../auth/permissions.js';
import { isNotFound } from '../loaders.js';
import { total, totalOf } from '../line-totals.js';
import { builder } from '../builder.js';
import { extraFieldOptions } from '../extra-fields.js';
import { fieldsOf, rootFieldsOf, type Sdl } from '../field-check.js';
import { ProductLineRef, TransactionRef } from '../refs.js';
import { decidedCurrency, historyFieldsOfTransaction, readOnce } from './transaction-history.js';
import { currencyOfTransaction } from '../transaction-currency.js';
import { served, servedAmounts, servedOrNull } from '../served-fields.js';

/** Most ids one `transactions` query may ask for. */
export const MAX_TRANSACTION_IDS = 500;

/** Refuses an id no resource can have (empty, over MAX_ID_BYTES, a dot segment) before any backend call. */
export function requireId(id: string, argument: string): string {
  const problem = idProblem(id);
  if (problem) throw refuse.invalidArgument(argument, problem);
  return id;
}

TransactionRef.implement({
  description: 'A sale made at a vending machine (contract part 2, "Transaction").',
  fields: (t) =>
    fieldsOf<Sdl.Transaction>()({
      id: t.id({
        description:
          "The key normalized client caches use without configuration (Apollo Client's InMemoryCache, urql's Graphcache): the " +
          'transactionId itself.',
        resolve: (tx) => served(tx, 'transactionId'),
      }),
      transactionId: t.id({
        description: 'Identifier of the transaction (UUID-shaped string).',
        resolve: (tx) => served(tx, 'transactionId'),
      }),
      customerId: t.id({
        nullable: true,
        description: 'Identifier of the customer, when the service knows one.',
        resolve: (tx) => servedOrNull(tx, 'customerId'),
      }),
      products: t.field({ type: [ProductLineRef], description: 'The items of the transaction.', resolve: (tx) => served(tx, 'products') }),
      status: t.string({
        description:
          'State of the transaction as the service reports it. Seen: "active", "pending"; the full list is not shown in the contract.',
        resolve: (tx) => served(tx, 'status'),
      }),
      total: t.float({
        description: "Computed by the gateway: the sum of the product lines' lineTotal, in `currency`.",
        resolve: (tx) => (readOnce(tx) ? total : totalOf)(servedAmounts(served(tx, 'products'))),
      }),
      currency: t.string({
        description:
          "The currency of `total` and of the lines' prices (ISO 4217): the one the service sends with the transaction " +
          '(`currencyCode`, else `currency`), else the `currencyCode` of the vending its `vendingId` names, else DEFAULT_CURRENCY ' +
          '(the contract shows no currency on a transaction); decided when its event is published, and for a transaction the history ' +
          'holds, the currency the history counted it in.',
        resolve: (tx, _args, ctx) => currencyOfTransaction(tx, ctx, decidedCurrency(tx)),
      }),
      extra: t.field(extraFieldOptions(transactionSchema, (tx) => tx)),
      ...historyFieldsOfTransaction(t),
    }),
});

builder.queryFields((t) =>
  rootFieldsOf<Sdl.Query>()({
    transaction: t.field({
      type: TransactionRef,
      nullable: true,
      description: 'One transaction by id (GET /transactions/{id}); null with a NOT_FOUND error when unknown.',
      args: { id: t.arg.id({ required: true, description: 'The transactionId.' }) },
      resolve: (_root, { id }, ctx) => ctx.loaders.transactionById.load(requireId(id, 'id')),
    }),
    transactions: t.field({
      type: [TransactionRef],
      nullable: { list: false, items: true },
      description:
        `Several transactions in one round trip, in the order asked; null where an id is unknown. ` + `At most ${MAX_TRANSACTION_IDS} ids.`,
      args: { ids: t.arg.idList({ required: true, description: 'The transactionIds; repeats are read once.' }) },
      resolve: async (_root, { ids }, ctx) => {
        if (ids.length > MAX_TRANSACTION_IDS) throw refuse.tooManyIds(MAX_TRANSACTION_IDS, ids.length);
        const results = await ctx.loaders.transactionById.loadMany(ids.map((id) => requireId(id, 'ids')));
        // Unknown ids become null; any other failure stays an error at its index.
        return results.map((result) => (isNotFound(result) ? null : result)) as never;
      },
    }),
  }),
);

const UpdateTransactionPaymentPayload = builder.objectRef<{ transactionId: string }>('UpdateTransactionPaymentPayload').implement({
  description: 'Result of updateTransactionPayment.',
  fields: (t) =>
    fieldsOf<Sdl.UpdateTransactionPaymentPayload>()({
      transaction: t.field({
        type: TransactionRef,
        nullable: true,
        description:
          'The transaction read back from the service after the update; null with a FORBIDDEN error for a key or token without the ' +
          '`read` permission (paying is not reading).',
        resolve: ({ transactionId }, _args, ctx) => {
          // The mutation needs `pay` only; what the transaction holds is for identities that may read it.
          requirePermission(ctx.credential, 'read');
          return ctx.loaders.transactionById.load(transactionId);
        },
      }),
    }),
});

builder.mutationFields((t) =>
  rootFieldsOf<Sdl.Mutation>()({
    updateTransactionPayment: t.field({
      type: UpdateTransactionPaymentPayload,
      description: 'Enriches a transaction with payment status and customer details (PUT /transactions/{id}/payment).',
      args: {
        transactionId: t.arg.id({ required: true, description: 'The transaction to enrich.' }),
        payment: t.arg({
          type: 'JSONObject',
          required: true,
          description: 'The payment update request body, sent as given; its fields are not shown in the contract.',
        }),
      },
      resolve: async (_root, { transactionId, payment }, ctx) => {
        await ctx.backend.updatePayment(requireId(transactionId, 'transactionId'), payment, ctx.credential, ctx.scope);
        ctx.loaders.forgetTransaction(transactionId);
        return { transactionId };
      },
    }),
  }),
);
