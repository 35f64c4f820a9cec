import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoBackend, forwardModeEnv, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { jsonLines } from '../helpers/log-lines.js';

/* The request log line counts the upstream calls each request made, and only its own. */

interface RequestLine {
  msg: string;
  requestId: string;
  path: string;
  status: number;
  upstreamCalls: number;
  upstreamMs: number;
}

describe('request log', () => {
  let upstream: StandInUpstream;
  let running: RunningGateway;
  const lines: RequestLine[] = [];
  beforeAll(async () => {
    upstream = await startStandInUpstream({ keys: [TEST_KEY] });
    const sink = jsonLines<RequestLine>((line) => lines.push(line));
    running = await startGateway(
      { ...forwardModeEnv(upstream.url), CACHE_TTL_MS: '0' },
      { logger: pino({ level: 'info' }, sink), fastPaths: { coalesce: false } },
    );
  });
  afterAll(async () => {
    await running.close();
    await upstream.close();
  });

  const lineFor = (requestId: string) => lines.find((line) => line.msg === 'request' && line.requestId === requestId);

  it("counts each request's own upstream calls, GraphQL and REST, side by side", async () => {
    const [a, b] = upstream.transactions.map((t) => (t as { transactionId: string }).transactionId);
    const graphql = (requestId: string, query: string) =>
      fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { authorization: TEST_KEY, 'content-type': 'application/json', 'x-request-id': requestId },
        body: JSON.stringify({ query }),
      });
    const answers = await Promise.all([
      graphql('two-reads', `{ x: transaction(id: "${a}") { status } y: transaction(id: "${b}") { status } }`),
      graphql('no-read', '{ __typename }'),
      fetch(`${running.url}/transactions/${a}`, { headers: { authorization: TEST_KEY, 'x-request-id': 'rest-read' } }),
    ]);
    for (const answer of answers) expect(answer.status).toBe(200);
    await Promise.all(answers.map((answer) => answer.arrayBuffer()));
    await new Promise((resolve) => setTimeout(resolve, 50));

    expect(lineFor('two-reads')).toMatchObject({ path: '/graphql', status: 200, upstreamCalls: 2 });
    expect(lineFor('two-reads')!.upstreamMs).toBeGreaterThan(0);
    expect(lineFor('no-read')).toMatchObject({ path: '/graphql', upstreamCalls: 0, upstreamMs: 0 });
    expect(lineFor('rest-read')).toMatchObject({ path: `/transactions/${a}`, status: 200, upstreamCalls: 1 });
  });
});

describe("a request's own log lines", () => {
  it("name the request's id, as the request line does (a masked failure of a REST read)", async () => {
    const lines: Array<{ msg: string; reqId?: string; requestId?: string; authorization?: string }> = [];
    const backend = demoBackend();
    backend.getTransaction = async () => {
      throw new Error('not for clients');
    };
    const running = await startGateway(
      {},
      {
        backend,
        logger: pino(
          { level: 'info', redact: ['authorization'] },
          jsonLines((line: (typeof lines)[number]) => lines.push(line)),
        ),
      },
    );
    try {
      const response = await fetch(`${running.url}/transactions/x`, {
        headers: { authorization: TEST_KEY, 'x-request-id': 'failing-read' },
      });
      expect(response.status).toBe(500);
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(lines.find((line) => line.msg === 'unexpected error')).toMatchObject({ reqId: 'failing-read' });
      expect(lines.find((line) => line.msg === 'request')).toMatchObject({ requestId: 'failing-read', status: 500 });
    } finally {
      await running.close();
    }
  });
});
