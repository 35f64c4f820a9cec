import { parseArgs } from 'node:util';
import { DEVELOPMENT_API_KEY, parseKeyEntry, type KeyEntry } from '../src/config/config.js';
import { buildWebhookRequest } from '../src/events/webhook-request.js';

/*
 * npm run webhook -- --transaction <id> [--status completed] [--form legacy|enveloped]
 *                    [--url http://$HOST:$PORT/webhooks] [--secret whsec_…] [--id msg_1]
 *                    [--products JSON] [--key K]
 * Sends one transaction.update webhook, signed when a secret is given
 * (default: $WEBHOOK_SECRET), and prints the gateway's answer. A webhook
 * carries the whole product list, and the gateway takes it as the service's
 * word: without --products the transaction's current products are read from
 * the same gateway (GET /transactions/{id} with --key), so only the status changes.
 */
const usage =
  `usage: npm run webhook -- --transaction <id> [--status S] [--form legacy|enveloped] [--url U] ` +
  `[--secret whsec_…] [--id ID] [--products JSON] [--key K]

Sends one transaction.update webhook to the gateway and prints its answer.
  --transaction <id>  the transaction the event is about (required)
  --status S          its new status (default: completed)
  --form F            legacy or enveloped (default: enveloped)
  --url U             where to post (default: http://$HOST:$PORT/webhooks)
  --secret whsec_…    signs the webhook (default: $WEBHOOK_SECRET; unsigned without one)
  --id ID             the event's id (webhook-id header and envelope id)
  --products JSON     the product lines to send, as a JSON array; without it they are
                      read from the same gateway (GET /transactions/{id}), so only the status changes
  --key K             the key of that read (default: the key of the first API_KEYS entry
                      with read, else the first entry, else the development key)
  -h, --help          prints this`;

/** Where `npm start` listens with the same environment (src/config.ts: PORT, HOST). */
function defaultUrl(): string {
  const host = process.env.HOST?.trim();
  // A wildcard listen address is not one to connect to.
  const connectTo = !host || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const port = process.env.PORT?.trim() || '4000';
  return `http://${connectTo.includes(':') ? `[${connectTo}]` : connectTo}:${port}/webhooks`;
}

/**
 * A key `npm start` accepts with the same environment: the key part of an
 * API_KEYS entry (`key:read+subscribe@acct` sends `key`), the first that may
 * read the products, else the first; the development key without API_KEYS.
 */
function defaultKey(): string {
  const entries = (process.env.API_KEYS ?? '')
    .split(',')
    .map(parseKeyEntry)
    .filter((entry): entry is KeyEntry => typeof entry !== 'string');
  return (entries.find((entry) => entry.permissions.includes('read')) ?? entries[0])?.key ?? DEVELOPMENT_API_KEY;
}

function fail(message: string, code = 1): never {
  process.stderr.write(`send-webhook: ${message}\n`);
  process.exit(code);
}

const options = {
  transaction: { type: 'string' },
  status: { type: 'string', default: 'completed' },
  form: { type: 'string', default: 'enveloped' },
  url: { type: 'string', default: defaultUrl() },
  secret: { type: 'string', default: process.env.WEBHOOK_SECRET },
  id: { type: 'string' },
  products: { type: 'string' },
  key: { type: 'string', default: defaultKey() },
  help: { type: 'boolean', short: 'h' },
} as const;

function parsedArguments() {
  try {
    return parseArgs({ options }).values;
  } catch (error) {
    // parseArgs says what is wrong (an unknown option, a missing value); its stack says nothing more.
    fail(`${(error as Error).message}\n${usage}`, 2);
  }
}

const values = parsedArguments();
if (values.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}

if (!values.transaction || (values.form !== 'legacy' && values.form !== 'enveloped')) fail(usage, 2);
const transactionId = values.transaction;

function givenProducts(text: string): unknown[] {
  let products: unknown;
  try {
    products = JSON.parse(text);
  } catch {
    fail(`--products must be a JSON array of product lines, got ${JSON.stringify(text)}`, 2);
  }
  if (!Array.isArray(products)) fail(`--products must be a JSON array of product lines, got ${JSON.stringify(text)}`, 2);
  return products;
}

/** The transaction's products as the gateway at `webhookUrl` has them now. */
async function currentProducts(webhookUrl: string, key: string): Promise<unknown[]> {
  const url = new URL(webhookUrl);
  // `/webhooks` or an account's `/webhooks/{account}`: the REST paths are beside them, at the gateway's root.
  url.pathname = `${url.pathname.replace(/webhooks(\/[^/]+)?\/?$/, '')}transactions/${encodeURIComponent(transactionId)}`;
  url.search = '';
  const instead = `or pass --products '[…]' to send a product list of your own`;
  let response: Response;
  try {
    response = await fetch(url, { headers: { authorization: key } });
  } catch (error) {
    const { cause } = error as { cause?: { code?: string; message?: string } };
    const why = cause?.code ?? cause?.message ?? String(error);
    fail(
      `cannot reach the gateway at ${url.origin} (${why}) to read transaction ${transactionId}'s products: ` +
        `start it, or point --url (or PORT and HOST) at it, ${instead}`,
    );
  }
  const text = await response.text();
  if (!response.ok) {
    const advice =
      response.status === 401 || response.status === 403
        ? 'the gateway refused the key: pass --key with one of its API_KEYS'
        : response.status === 404
          ? 'no such transaction there'
          : 'the gateway could not answer';
    fail(`GET ${url} answered ${response.status} ${text.trim().slice(0, 200)}: ${advice}, ${instead}`);
  }
  const products = (JSON.parse(text) as { data?: { products?: unknown } }).data?.products;
  if (!Array.isArray(products)) fail(`GET ${url} answered without a products list, ${instead}`);
  return products as unknown[];
}

const products = values.products !== undefined ? givenProducts(values.products) : await currentProducts(values.url, values.key);
const request = buildWebhookRequest({
  form: values.form,
  // The contract's types are checked by the gateway, which answers 400 naming any problem.
  transaction: { transactionId, status: values.status, products: products as never },
  secret: values.secret,
  id: values.id,
});
const response = await fetch(values.url, { method: 'POST', headers: request.headers, body: request.body });
process.stdout.write(`${response.status} ${await response.text()}\n`);
process.exit(response.ok ? 0 : 1);
