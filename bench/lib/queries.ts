import { BodyCheck } from './expect.js';
import { totalOf, transactionById, transactions, vendings, type Transaction } from './fixtures.js';

/*
 * The GraphQL documents measured (S1, S2, S7) with the exact answers they must
 * get, derived from the fixtures independently of any server.
 */

export const S1_ID = transactions[7]!.transactionId;

export const SINGLE_QUERY = `query { transaction(id: "${S1_ID}") { transactionId customerId status total products { productId productName productPrice quantity } } }`;

const transactionView = (t: Transaction) => ({
  transactionId: t.transactionId,
  customerId: t.customerId,
  status: t.status,
  total: totalOf(t),
  products: t.products.map(({ productId, productName, productPrice, quantity }) => ({ productId, productName, productPrice, quantity })),
});

export const singleCheck = () => new BodyCheck({ data: { transaction: transactionView(transactions[7]!) } });

/**
 * The single query as dashboards send it (S1, S7): the id a variable, and the ids rotating over 60 transactions, so
 * that requests in flight at once rarely share an id and coalescing cannot answer many of them with one upstream call.
 */
export const ROTATED_IDS: string[] = transactions.slice(0, 60).map((t) => t.transactionId);

export const SINGLE_BY_ID_QUERY = 'query ($id: ID!) { transaction(id: $id) { transactionId customerId status total products { productId productName productPrice quantity } } }';

/** One GraphQL request per rotated id, each with its own expected answer. */
export const rotatedSingleCases = () =>
  ROTATED_IDS.map((id) => ({ query: SINGLE_BY_ID_QUERY, variables: { id }, check: new BodyCheck({ data: { transaction: transactionView(transactionById.get(id)!) } }) }));

/** The upstream's (and REST passthrough's) envelope of a transaction, as the contract upstream serialises it. */
export const transactionEnvelope = (id: string): string => JSON.stringify({ data: transactionById.get(id) });

/** 50 ids: 40 distinct, then 10 of them again, interleaved as a dashboard would list them. */
export const BATCH_IDS: string[] = (() => {
  const distinct = transactions.slice(100, 140).map((t) => t.transactionId);
  const ids = [...distinct];
  for (let k = 0; k < 10; k += 1) ids.splice(5 * k + 4, 0, distinct[k * 3]!);
  return ids;
})();
export const BATCH_DISTINCT = new Set(BATCH_IDS).size;

export const BATCH_QUERY = 'query Batch($ids: [ID!]!) { transactions(ids: $ids) { transactionId status total products { productId quantity } } }';

export const batchCheck = () =>
  new BodyCheck({
    data: {
      transactions: BATCH_IDS.map((id) => {
        const t = transactions.find((x) => x.transactionId === id)!;
        return { transactionId: t.transactionId, status: t.status, total: totalOf(t), products: t.products.map(({ productId, quantity }) => ({ productId, quantity })) };
      }),
    },
  });

const FLEET = vendings.slice(0, 20);
const VENDING_FIELDS = 'vendingId identifier status online enabled address productCount';

/** The fleet overview as a dashboard writes it: the count, then one alias per machine card. */
export const FLEET_QUERY = `query Fleet { vendings { totalCount } ${FLEET.map((v, i) => `v${i}: vending(id: "${v.vendingId}") { ${VENDING_FIELDS} }`).join(' ')} }`;

export const fleetCheck = () =>
  new BodyCheck({
    data: {
      vendings: { totalCount: vendings.length },
      ...Object.fromEntries(
        FLEET.map((v, i) => [
          `v${i}`,
          { vendingId: v.vendingId, identifier: v.identifier, status: v.status, online: v.online, enabled: v.enabled, address: v.address, productCount: v.products.length },
        ]),
      ),
    },
  });
