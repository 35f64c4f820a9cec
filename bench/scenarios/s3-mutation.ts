import { BodyCheck } from '../lib/expect.js';
import { totalOf, transactions } from '../lib/fixtures.js';
import { graphqlTarget, measureHttp } from '../lib/http-load.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { CLIENT_KEY, startGateway } from '../lib/servers.js';
import { httpRow } from '../lib/table.js';

/* S3: the payment mutation, rotating over every transaction id so no answer can be reused across requests. */

const MUTATION =
  'mutation Pay($id: ID!) { updateTransactionPayment(transactionId: $id, ' +
  'payment: { paymentStatus: "captured", wallet: "apple_pay" }) { transaction { transactionId status total } } }';

export const s3: Scenario = {
  name: 'S3',
  title: 'payment mutation',
  async run({ upstream, log }) {
    return withChild(startGateway(upstream.url, {}), async (gateway) => {
      log('updateTransactionPayment, rotating over 200 ids');
      const cases = transactions.map((t) => ({
        query: MUTATION,
        variables: { id: t.transactionId },
        check: new BodyCheck({
          data: { updateTransactionPayment: { transaction: { transactionId: t.transactionId, status: t.status, total: totalOf(t) } } },
        }),
      }));
      const m = await measureHttp(graphqlTarget(gateway.url, '/graphql', CLIENT_KEY, cases), { upstream, server: gateway });
      return [httpRow('S3', 'updateTransactionPayment (PUT, then the read-back), defaults', m)];
    });
  },
};
