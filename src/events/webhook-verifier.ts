import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { refusalMessage } from '../refusals/transport-refusals.js';

/*
 * Standard Webhooks signatures (webhook-id, webhook-timestamp,
 * webhook-signature; HMAC-SHA256; 5-minute tolerance), checked by the
 * reference library. Several secrets may be configured while one is rotated
 * out; a sender rotating its own key sends several signatures, any of which
 * may match.
 */

export type Verification = { ok: true } | { ok: false; reason: string };

/** A request header's value, by lower-case name. */
export type HeaderOf = (name: string) => string | undefined;

export interface WebhookVerifier {
  verify(body: string, header: HeaderOf): Verification;
}

export function createWebhookVerifier(secrets: readonly string[]): WebhookVerifier {
  const webhooks = secrets.map((secret) => new Webhook(secret));
  return {
    verify(body, header) {
      const signed = {
        'webhook-id': header('webhook-id') ?? '',
        'webhook-timestamp': header('webhook-timestamp') ?? '',
        'webhook-signature': header('webhook-signature') ?? '',
      };
      const missing = Object.entries(signed)
        .filter(([, value]) => value === '')
        .map(([name]) => name);
      if (missing.length > 0) return { ok: false, reason: refusalMessage.webhookHeadersMissing(missing) };
      let reason = refusalMessage.noMatchingSignature();
      for (const webhook of webhooks) {
        try {
          // The library would also JSON.parse the body; reading it is normalize.ts's job (a 400, not a throw).
          webhook.verify(body, signed, { jsonParse: false });
          return { ok: true };
        } catch (error) {
          if (!(error instanceof WebhookVerificationError)) throw error;
          reason = error.message;
        }
      }
      return { ok: false, reason };
    },
  };
}
