import { buildDist } from '../scripts/build.js';

/*
 * Vitest's global set-up: tests that start the gateway as `npm start` does
 * run dist/, so it is built once from the sources under test, never stale.
 * The build also writes the dashboard (dist/web/), which the gateways the
 * tests start in process, from src/, serve as well.
 */
export default async function setup(): Promise<void> {
  await buildDist();
}
