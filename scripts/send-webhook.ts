import { parseArgs } from 'node:util';
import { buildWebhookRequest, type WebhookForm } from '../src/events/webhook-request.js';

/*
 * npm run webhook -- --transaction <id> [--status completed] [--form legacy|enveloped]
 *                    [--url http://localhost:4000/webhooks] [--secret whsec_…] [--id msg_1]
 * Sends one transaction.update webhook, signed when a secret is given
 * (default: $WEBHOOK_SECRET), and prints the gateway's answer.
 */
const usage = 'usage: npm run webhook -- --transaction <id> [--status S] [--form legacy|enveloped] [--url U] [--secret whsec_…] [--id ID] [--products JSON]';

const { values } = parseArgs({
  options: {
    transaction: { type: 'string' },
    status: { type: 'string', default: 'completed' },
    form: { type: 'string', default: 'enveloped' },
    url: { type: 'string', default: 'http://localhost:4000/webhooks' },
    secret: { type: 'string', default: process.env.WEBHOOK_SECRET },
    id: { type: 'string' },
    products: { type: 'string', default: '[]' },
  },
});

if (!values.transaction || (values.form !== 'legacy' && values.form !== 'enveloped')) {
  process.stderr.write(`${usage}\n`);
  process.exit(2);
}

const request = buildWebhookRequest({
  form: values.form as WebhookForm,
  transaction: { transactionId: values.transaction, status: values.status, products: JSON.parse(values.products) },
  secret: values.secret,
  id: values.id,
});
const response = await fetch(values.url, { method: 'POST', headers: request.headers, body: request.body });
process.stdout.write(`${response.status} ${await response.text()}\n`);
process.exit(response.ok ? 0 : 1);
