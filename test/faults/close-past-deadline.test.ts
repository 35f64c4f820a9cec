import { connect } from 'node:net';
import { expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';

/*
 * A connection that is neither idle nor a request the gateway handles (a
 * request whose body never finishes arriving) is cut only at the shutdown's
 * deadline. The stop must still end cleanly then: Fastify's own bound on each
 * start and close step (10 s unless told) once equalled that deadline, and a
 * stop that used all of it failed with "Plugin did not start in time".
 */

it("ends its stop cleanly when a connection holds it to the deadline, past Fastify's default bound", async () => {
  const gateway = await startGateway({}, {}, (config) => ({ ...config, shutdownTimeoutMs: 10_500 }));
  const { port } = new URL(gateway.url);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.on('error', () => {});
  // Headers and a tenth of the body; the rest never comes.
  socket.write('POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":1,');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const started = Date.now();
  await expect(gateway.close()).resolves.toBeUndefined();
  // It waited for the deadline (the connection was not idle), then cut it.
  expect(Date.now() - started).toBeGreaterThan(9_000);
  socket.destroy();
}, 30_000);
