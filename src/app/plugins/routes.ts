import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import { dashboardRoutes } from '../../dashboard/dashboard-routes.js';
import { DEFAULT_ACCOUNT } from '../../contract/contract.js';
import { webhookRoutes } from '../../events/webhook-route.js';
import { createWebhookVerifier } from '../../events/webhook-verifier.js';
import { registerRoutes } from '../../http/front-door.js';
import type { Logger } from '../../logging/logger.js';
import { restRoutes } from '../../rest/rest-routes.js';

/* The plain routes on the front door: the REST contract's paths, the webhooks, the dashboard. */

/** The default account's webhooks; each account's are at `/webhooks/{account}`. */
export const WEBHOOK_PATH = '/webhooks';

export const restPlugin = fp(
  async (app) => {
    registerRoutes(app, restRoutes({ backend: app.backend, guard: app.auth.guard }));
  },
  { name: 'rest', dependencies: ['auth', 'backend'] },
);

export const webhooksPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const logger = app.log as Logger;
    const { bus, metrics, shutdown } = app;
    const accounts = config.webhookAccountSecrets;
    if (config.webhookSecrets.length === 0) {
      const except = accounts.size > 0 ? ` (except on the paths of the ${accounts.size} account(s) with secrets of their own)` : '';
      logger.warn(`WEBHOOK_SECRET is not set: webhooks are accepted without a signature${except}`);
    }
    registerRoutes(
      app,
      webhookRoutes({
        path: WEBHOOK_PATH,
        maxBodyBytes: config.maxBodyBytes,
        verifier: config.webhookSecrets.length > 0 ? createWebhookVerifier(config.webhookSecrets) : undefined,
        accountVerifiers: new Map([...accounts].map(([account, secrets]) => [account, createWebhookVerifier(secrets)] as const)),
        publish: async (event, dedupeBy) => bus.publish(await app.withCurrency(event), dedupeBy),
        onOutcome(outcome, detail, account) {
          metrics.webhook(outcome, detail);
          // An account's webhooks are told apart in the log, not in the metrics (as many series as accounts).
          if (account === DEFAULT_ACCOUNT) logger.info({ webhook: outcome, detail }, 'webhook');
          else logger.info({ webhook: outcome, detail, account }, 'webhook');
        },
        // Once subscriptions are being ended an event could reach no one here, and while the history's feed
        // holds all it may, taking one would mean dropping an acknowledged event: the sender retries (503).
        accepting: () => !shutdown.endingStreams && !app.historyFeed?.full(),
        tracing: app.tracing,
      }),
    );
  },
  { name: 'webhooks', dependencies: ['events', 'backend', 'metrics', 'shutdown'] },
);

export const dashboardPlugin = fp(
  async (app) => {
    registerRoutes(
      app,
      dashboardRoutes((error) => app.log.error({ err: error }, 'could not read the dashboard')),
    );
  },
  { name: 'dashboard' },
);
