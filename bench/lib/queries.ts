import { BodyCheck } from './expect.js';
import { APOLLO_CLIENT_ACCEPT, graphqlTarget, type HttpTarget } from './http-load.js';
import { CLIENT_KEY } from './servers.js';
import { totalOf, transactionById, transactions, vendings, type Transaction } from './fixtures.js';

/** The one id Hive's single document asks (its schema's root field takes the id as a literal here). */
export const S1_ID = transactions[7]!.transactionId;

const transactionView = (t: Transaction) => ({
  transactionId: t.transactionId,
  customerId: t.customerId,
  status: t.status,
  total: totalOf(t),
  products: t.products.map(({ productId, productName, productPrice, quantity }) => ({ productId, productName, productPrice, quantity })),
});

export const ROTATED_IDS: string[] = transactions.slice(0, 60).map((t) => t.transactionId);

export const SINGLE_BY_ID_QUERY =
  'query ($id: ID!) { transaction(id: $id) { transactionId customerId status total ' +
  'products { productId productName productPrice quantity } } }';

export const rotatedSingleCases = () =>
  ROTATED_IDS.map((id) => ({
    query: SINGLE_BY_ID_QUERY,
    variables: { id },
    check: new BodyCheck({ data: { transaction: transactionView(transactionById.get(id)!) } }),
  }));

/** The upstream's (and REST passthrough's) envelope of a transaction, as the contract upstream serialises it. */
export const transactionEnvelope = (id: string): string => JSON.stringify({ data: transactionById.get(id) });

/** GET /transactions/{id} over the rotated ids; the hop and the upstream answer the upstream's bytes, the gateway is judged by content. */
export const restTarget = (url: string, headers: Record<string, string> = {}, exact = true): HttpTarget => ({
  url,
  method: 'GET',
  headers,
  cases: ROTATED_IDS.map((id) => ({
    path: `/transactions/${id}`,
    check: exact ? BodyCheck.exact(transactionEnvelope(id)) : new BodyCheck(JSON.parse(transactionEnvelope(id))),
  })),
});
export const gatewayRest = (url: string) => restTarget(url, { authorization: CLIENT_KEY }, false);
/** S1's and S8's GraphQL request: `transaction(id: $id)` with the id in variables, and Apollo Client's Accept. */
export const gatewayGraphql = (url: string) => graphqlTarget(url, '/graphql', CLIENT_KEY, rotatedSingleCases(), APOLLO_CLIENT_ACCEPT);

/** 50 ids: 40 distinct, then 10 of them again, interleaved as a dashboard would list them. */
export const BATCH_IDS: string[] = (() => {
  const distinct = transactions.slice(100, 140).map((t) => t.transactionId);
  const ids = [...distinct];
  for (let k = 0; k < 10; k += 1) ids.splice(5 * k + 4, 0, distinct[k * 3]!);
  return ids;
})();
export const BATCH_DISTINCT = new Set(BATCH_IDS).size;

export const BATCH_QUERY =
  'query Batch($ids: [ID!]!) { transactions(ids: $ids) { transactionId status total products { productId quantity } } }';

export const batchCheck = () =>
  new BodyCheck({
    data: {
      transactions: BATCH_IDS.map((id) => {
        const t = transactionById.get(id)!;
        const products = t.products.map(({ productId, quantity }) => ({ productId, quantity }));
        return { transactionId: t.transactionId, status: t.status, total: totalOf(t), products };
      }),
    },
  });

const FLEET = vendings.slice(0, 20);
const VENDING_FIELDS = 'vendingId identifier status online enabled address productCount';

const FLEET_CARDS = FLEET.map((v, i) => `v${i}: vending(id: "${v.vendingId}") { ${VENDING_FIELDS} }`).join(' ');
/** The fleet overview as a dashboard writes it: the count, then one alias per machine card. */
export const FLEET_QUERY = `query Fleet { vendings { totalCount } ${FLEET_CARDS} }`;

export const fleetCheck = () =>
  new BodyCheck({
    data: {
      vendings: { totalCount: vendings.length },
      ...Object.fromEntries(
        FLEET.map(({ vendingId, identifier, status, online, enabled, address, products }, i) => {
          return [`v${i}`, { vendingId, identifier, status, online, enabled, address, productCount: products.length }];
        }),
      ),
    },
  });

const HIVE_TRANSACTION = (id: string, fields: string) =>
  `getTransaction(id: "${id}") { ... on TransactionEnvelope { data { ${fields} } } }`;

const HIVE_SINGLE_FIELDS = 'transactionId customerId status total products { productId productName productPrice quantity }';
export const HIVE_SINGLE_QUERY = `query { transaction: ${HIVE_TRANSACTION(S1_ID, HIVE_SINGLE_FIELDS)} }`;

export const hiveSingleCheck = () => new BodyCheck({ data: { transaction: { data: transactionView(transactions[7]!) } } });

const HIVE_BATCH_ALIASES = BATCH_IDS.map(
  (id, i) => `t${i}: ${HIVE_TRANSACTION(id, 'transactionId status total products { productId quantity }')}`,
).join(' ');
/** The 50-id batch as a client of a schema without a list-by-ids field writes it: one alias per id. */
export const HIVE_BATCH_QUERY = `query Batch { ${HIVE_BATCH_ALIASES} }`;

export const hiveBatchCheck = () => {
  const expected = batchCheck().expected as { data: { transactions: unknown[] } };
  return new BodyCheck({ data: Object.fromEntries(expected.data.transactions.map((t, i) => [`t${i}`, { data: t }])) });
};

const HIVE_FLEET_CARDS = FLEET.map(
  (v, i) => `v${i}: getVending(id: "${v.vendingId}", products: "flat") { ... on VendingEnvelope { data { ${VENDING_FIELDS} } } }`,
).join(' ');
const HIVE_FLEET_COUNT = 'vendings: listVendings(products: "flat") { ... on VendingListEnvelope { totalCount } }';
export const HIVE_FLEET_QUERY = `query Fleet { ${HIVE_FLEET_COUNT} ${HIVE_FLEET_CARDS} }`;

export const hiveFleetCheck = () => {
  const { data } = fleetCheck().expected as { data: Record<string, unknown> };
  return new BodyCheck({
    data: Object.fromEntries(Object.entries(data).map(([alias, value]) => [alias, alias === 'vendings' ? value : { data: value }])),
  });
};
