import { accountOf } from '../../contract/accounts.js';
import { currencyInFields } from '../../contract/contract.js';
import { deliveredEvent, resumePoint } from '../subscription-events.js';
import type { LoggedEvent } from '../../events/event-log.js';
import { readableEvents } from '../../events/readable-events.js';
import type { TransactionUpdateEvent } from '../../events/normalize.js';
import { builder } from '../builder.js';
import { ProductLineRef, TransactionRef } from '../refs.js';
import { requireId } from './transaction.js';
import { exactly, fieldsOf, rootFieldsOf, type Sdl } from '../field-check.js';

const WebhookFormat = builder.enumType('WebhookFormat', {
  description: "Which form of the service's webhook carried an event (contract parts 6 and 9).",
  values: exactly<Sdl.WebhookFormat>()({
    LEGACY: { value: 'LEGACY', description: 'The legacy body `{event: "transaction", data: {transactionId, products, status}}`.' },
    ENVELOPED: {
      value: 'ENVELOPED',
      description: 'The current enveloped form whose `type` is "transaction.update" (its envelope is not shown in the contract).',
    },
  } as const),
});

const TransactionUpdateEventRef = builder.objectRef<TransactionUpdateEvent>('TransactionUpdateEvent').implement({
  description: 'A transaction changed at the service, as its webhook told the gateway.',
  fields: (t) =>
    fieldsOf<Sdl.TransactionUpdateEvent>()({
      eventId: t.exposeID('eventId', {
        description:
          'Identifier of the event: the webhook-id header, else the envelope id, else (a legacy body) an id the gateway made. ' +
          'Redeliveries share it.',
      }),
      type: t.exposeString('type', { description: 'Always "transaction.update", whatever the form.' }),
      format: t.field({ type: WebhookFormat, description: 'The webhook form that carried the event.', resolve: (e) => e.format }),
      receivedAt: t.field({ type: 'DateTime', description: 'When the gateway received the webhook.', resolve: (e) => e.receivedAt }),
      occurredAt: t.string({
        nullable: true,
        description: "The envelope's own timestamp, as sent, when there was one (never in the legacy form).",
        resolve: (e) => e.occurredAt ?? null,
      }),
      transactionId: t.exposeID('transactionId', { description: 'The transaction that changed.' }),
      status: t.exposeString('status', { description: "The transaction's status as the webhook reported it." }),
      currency: t.string({
        description:
          "The currency of the event's amounts (ISO 4217), decided once when the gateway published it: the transaction's own field, " +
          "else its vending's `currencyCode`, else DEFAULT_CURRENCY.",
        resolve: (e, _args, ctx) => e.currency ?? currencyInFields(e.transaction) ?? ctx.defaultCurrency,
      }),
      products: t.field({
        type: [ProductLineRef],
        description: 'The product lines as the webhook reported them.',
        resolve: (e) => e.products,
      }),
      transaction: t.field({
        type: TransactionRef,
        nullable: true,
        description:
          'The full transaction read from the service after the event; read once per event and API key, however many subscribers ask.',
        resolve: (event, _args, ctx) => ctx.eventTransactions.load(event, ctx.credential),
      }),
      raw: t.field({ type: 'JSON', description: 'The webhook body exactly as received.', resolve: (e) => e.raw }),
    }),
});

builder.subscriptionType({ description: "Live changes, fed by the service's webhooks." });

builder.subscriptionFields((t) =>
  rootFieldsOf<Sdl.Subscription>()({
    transactionUpdated: t.field({
      type: TransactionUpdateEventRef,
      description: 'Every transaction update the service reports, once each, as it arrives.',
      args: {
        transactionId: t.arg.id({ description: 'Only updates of this transaction; all when omitted.' }),
        after: t.arg.id({
          description:
            'The last eventId this client saw (or the SSE `id:` of its last frame): the events published after it are replayed ' +
            'first, then live ones follow, with no gap and no repeat. Fails with EVENTS_EXPIRED, whose extensions.cursor is the ' +
            'position to resume from once reloaded, when that event is older than the event log reaches. When omitted, the ' +
            "connection's resume point is used: a Last-Event-ID header over SSE, connectionParams.after over graphql-ws.",
        }),
      },
      subscribe: async (_root, { transactionId, after }, ctx) => {
        if (transactionId !== null && transactionId !== undefined) requireId(transactionId, 'transactionId');
        const from = resumePoint(after, ctx.connectionAfter);
        const { credential, accountAccess } = ctx;
        // Replayed and live alike, only what the key's account may read: the account a key or token names, or in forward
        // mode what the service says, event by event (an event id in `after` is one of the key's own account, asked only then).
        if (!accountAccess.asksTheService)
          return ctx.bus.subscribe({ transactionId, after: from, account: await accountAccess.historyAccount(credential) });
        const afterAccount = from ? await accountAccess.historyAccount(credential) : undefined;
        const events = await ctx.bus.subscribe({ transactionId, after: from, afterAccount });
        return readableEvents(events, ({ event }) => accountAccess.mayRead(credential, accountOf(event), event.transactionId));
      },
      resolve: (logged: LoggedEvent, _args, ctx) => deliveredEvent(logged, ctx),
    }),
  }),
);
