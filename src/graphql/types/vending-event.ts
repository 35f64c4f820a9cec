import type { LoggedEvent } from '../../events/event-log.js';
import { vendingUpdateOf, type VendingUpdate } from '../../events/vending-events.js';
import { builder } from '../builder.js';
import { fieldsOf, rootFieldsOf, type Sdl } from '../field-check.js';
import { VendingRef } from '../refs.js';
import { deliveredEvent, resumePoint } from '../subscription-events.js';
import { requireId } from './transaction.js';

/*
 * `vendingUpdated`: a machine's status, online, enabled or products changed.
 * The service sends no webhook for vendings; the gateway reads the machines
 * (VENDING_POLL_MS) and publishes what changed on a log of their own
 * (events/vending-events.ts), delivered like transaction events: replay and
 * resume, shared executions, accounts, permissions.
 */

const VendingUpdateEventRef = builder.objectRef<VendingUpdate>('VendingUpdateEvent').implement({
  description: 'A machine changed at the service, as the gateway read it (the service sends no webhook for vendings: VENDING_POLL_MS).',
  fields: (t) =>
    fieldsOf<Sdl.VendingUpdateEvent>()({
      eventId: t.exposeID('eventId', { description: 'Identifier of the event, made by the gateway; `after` takes it to resume.' }),
      receivedAt: t.field({ type: 'DateTime', description: 'When the gateway read the change.', resolve: (e) => new Date(e.receivedAt) }),
      vendingId: t.exposeID('vendingId', { description: 'The machine that changed.' }),
      changed: t.exposeStringList('changed', {
        description:
          'Which of `status`, `online`, `enabled` and `products` changed since the gateway last read the machine; empty for the ' +
          'first read of a machine (at start, or when another instance took over reading).',
      }),
      status: t.string({
        nullable: true,
        description: "The machine's status now.",
        resolve: (e) => (typeof e.vending.status === 'string' ? e.vending.status : null),
      }),
      online: t.boolean({
        nullable: true,
        description: 'Whether the machine is online now.',
        resolve: (e) => (typeof e.vending.online === 'boolean' ? e.vending.online : null),
      }),
      enabled: t.boolean({
        nullable: true,
        description: 'Whether the machine is enabled now.',
        resolve: (e) => (typeof e.vending.enabled === 'boolean' ? e.vending.enabled : null),
      }),
      offlineSince: t.field({
        type: 'DateTime',
        nullable: true,
        description: 'Since when the gateway sees the machine offline (its first read of it offline); null while online.',
        resolve: (e) => (e.offlineSince === null ? null : new Date(e.offlineSince)),
      }),
      vending: t.field({
        type: VendingRef,
        description: 'The machine as read, products in the FLAT view.',
        resolve: (e) => ({ vending: e.vending, view: 'FLAT' as const }),
      }),
    }),
});

builder.subscriptionFields((t) =>
  rootFieldsOf<Sdl.Subscription>()({
    vendingUpdated: t.field({
      type: VendingUpdateEventRef,
      description: "A machine's status, online, enabled or products changed, once each, as the gateway reads it (VENDING_POLL_MS).",
      args: {
        vendingId: t.arg.id({ description: 'Only changes of this machine; all when omitted.' }),
        after: t.arg.id({
          description:
            'The last eventId this client saw (or the SSE `id:` of its last frame): the changes published after it are replayed ' +
            'first, then live ones follow. Fails with EVENTS_EXPIRED (extensions.cursor: where to resume once reloaded) when the ' +
            "machines' log no longer reaches it. When omitted, the connection's resume point is used, as for transactionUpdated.",
        }),
      },
      subscribe: async (_root, { vendingId, after }, ctx) => {
        if (vendingId !== null && vendingId !== undefined) requireId(vendingId, 'vendingId');
        const from = resumePoint(after, ctx.connectionAfter);
        // The machines are read with the gateway's own key, of its account: a caller receives only its own account's.
        return ctx.vendingBus.subscribe({
          transactionId: vendingId,
          after: from,
          account: await ctx.accountAccess.historyAccount(ctx.credential),
        });
      },
      resolve: (logged: LoggedEvent, _args, ctx) => vendingUpdateOf(deliveredEvent(logged, ctx)),
    }),
  }),
);
