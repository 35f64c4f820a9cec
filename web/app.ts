import { FleetOverviewDocument, VendingDetailDocument, type FleetOverviewQuery } from '../src/graphql/generated/operations.js';
import { GatewayProblem, runQuery } from './api.js';
import { startLiveFeed, type FeedState } from './live-feed.js';
import { startHistoryPanel, type HistoryPanel } from './history-panel.js';
import { startStuckPayments, type StuckPayments } from './stuck-payments.js';
import { feedItem, machineCard, machineDetail } from './render.js';

/*
 * The operator's dashboard: the fleet, one machine's products, the live
 * transaction feed, and the transaction history the gateway keeps, all through the gateway's own GraphQL API (the operations
 * of schema/operations/), so it is also the reference client.
 */

const KEY_STORAGE = 'vending-gateway.key';
const FEED_LIMIT = 50;
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

let machines: FleetOverviewQuery['vendings']['nodes'] = [];
let selected: string | undefined;
let stopFeed: (() => void) | undefined;
let history: HistoryPanel | undefined;
let stuck: StuckPayments | undefined;

function showError(message: string | undefined): void {
  const box = $('error');
  box.hidden = message === undefined;
  box.textContent = message ?? '';
}

function setState(state: FeedState): void {
  const badge = $('connection');
  badge.className = `connection ${state}`;
  badge.textContent = state === 'connected' ? 'live' : state;
}

function renderFleet(): void {
  $('fleet-count').textContent = `(${machines.length})`;
  $('fleet').replaceChildren(...machines.map((machine) => machineCard(machine, machine.vendingId === selected, (id) => void select(id))));
}

async function select(id: string): Promise<void> {
  selected = id;
  renderFleet();
  const key = sessionStorage.getItem(KEY_STORAGE) ?? '';
  try {
    const { vending } = await runQuery(VendingDetailDocument, { id }, key);
    $('detail-title').textContent = vending?.identifier ?? 'Machine';
    $('detail').replaceChildren(vending ? machineDetail(vending) : document.createTextNode('This machine no longer exists.'));
  } catch (error) {
    showError(error instanceof Error ? error.message : String(error));
  }
}

async function open(key: string): Promise<void> {
  showError(undefined);
  try {
    machines = (await runQuery(FleetOverviewDocument, {}, key)).vendings.nodes;
  } catch (error) {
    if (error instanceof GatewayProblem && error.code === 'UNAUTHENTICATED') return askForKey(error.message);
    showError(error instanceof Error ? error.message : String(error));
    return;
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  $('key-form').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  renderFleet();
  stopFeed?.();
  history?.stop();
  history = startHistoryPanel(key);
  stuck?.stop();
  stuck = startStuckPayments(key);
  stopFeed = startLiveFeed(key, {
    onState(state) {
      setState(state);
      if (state === 'connected') {
        history?.noteConnected();
        stuck?.noteEvent();
      }
    },
    onVending(event) {
      // The machine as it is now: its card says so at once, and its products if it is the one shown.
      machines = machines.map((machine) =>
        machine.vendingId === event.vendingId
          ? {
              ...machine,
              status: event.status,
              online: event.online,
              enabled: event.enabled,
              offlineSince: event.offlineSince,
              productCount: event.vending.productCount,
            }
          : machine,
      );
      renderFleet();
      if (event.vendingId === selected && event.changed.includes('products')) void select(event.vendingId);
    },
    onEvent(event) {
      history?.noteEvent(event);
      stuck?.noteEvent();
      const feed = $('feed');
      feed.prepend(feedItem(event));
      while (feed.children.length > FEED_LIMIT) feed.lastElementChild?.remove();
    },
    onNotice(message, fatal) {
      if (fatal) return askForKey(message);
      $('feed-note').textContent = message;
    },
  });
}

function askForKey(problem?: string): void {
  stopFeed?.();
  stopFeed = undefined;
  history?.stop();
  history = undefined;
  stuck?.stop();
  stuck = undefined;
  sessionStorage.removeItem(KEY_STORAGE);
  setState('connecting');
  $('connection').textContent = 'offline';
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('key-form').hidden = false;
  showError(problem);
  $<HTMLInputElement>('key').focus();
}

$<HTMLFormElement>('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = $<HTMLInputElement>('key').value.trim();
  if (key) void open(key);
});
$('sign-out').addEventListener('click', () => askForKey());

const saved = sessionStorage.getItem(KEY_STORAGE);
if (saved) void open(saved);
else askForKey();
