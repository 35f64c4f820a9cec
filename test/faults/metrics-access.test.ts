import { describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY } from '../helpers/gateway.js';

/*
 * `/metrics` can be put behind a token (METRICS_TOKEN) or on a port of its
 * own (METRICS_PORT), so a gateway facing clients does not show them its
 * traffic.
 */

const scrape = (url: string, authorization?: string) =>
  fetch(url, { headers: authorization ? { authorization } : {} }).then(async (response) => ({
    status: response.status,
    text: await response.text(),
  }));

describe('who may read /metrics', () => {
  it('by default: anyone who reaches the port', async () => {
    const running = await startGateway();
    try {
      const { status, text } = await scrape(`${running.url}/metrics`);
      expect(status).toBe(200);
      expect(text).toContain('vending_gateway_requests_total');
    } finally {
      await running.close();
    }
  });

  it('with METRICS_TOKEN: only a scrape bearing it', async () => {
    const running = await startGateway({ METRICS_TOKEN: 'scrape-secret' });
    try {
      for (const authorization of [undefined, TEST_KEY, 'Bearer wrong', 'scrape-secret', 'Basic c2NyYXBlLXNlY3JldA==']) {
        const { status, text } = await scrape(`${running.url}/metrics`, authorization);
        expect(status, String(authorization)).toBe(401);
        expect(text).not.toContain('vending_gateway_');
      }
      const { status, text } = await scrape(`${running.url}/metrics`, 'Bearer scrape-secret');
      expect(status).toBe(200);
      expect(text).toContain('vending_gateway_requests_total');
      // The probes stay open: orchestrators poll them without secrets.
      expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });

  it('with METRICS_PORT: only on that port, which closes with the gateway', async () => {
    const running = await startGateway({ METRICS_PORT: '0', METRICS_TOKEN: 'scrape-secret' });
    const { metricsUrl } = running;
    try {
      expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect(metricsUrl).not.toContain(new URL(running.url).port);
      expect((await scrape(`${running.url}/metrics`, 'Bearer scrape-secret')).status).toBe(404);
      expect((await scrape(metricsUrl!)).status).toBe(401);
      const { status, text } = await scrape(metricsUrl!, 'Bearer scrape-secret');
      expect(status).toBe(200);
      expect(text).toContain('vending_gateway_requests_total');
      // Nothing else is served there.
      expect((await scrape(metricsUrl!.replace('/metrics', '/graphql'), TEST_KEY)).status).toBe(404);
    } finally {
      await running.close();
    }
    const after = await fetch(metricsUrl!).then(
      (response) => response.status,
      () => 'refused',
    );
    expect(after).toBe('refused');
  });
});
