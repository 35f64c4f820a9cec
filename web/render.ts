import type { FleetOverviewQuery, VendingDetailQuery } from '../src/graphql/generated/operations.js';
import type { TransactionEvent } from './live-feed.js';

/*
 * DOM building without a framework. Text goes in through textContent, never
 * innerHTML: every value shown comes from the service.
 */

type Machine = FleetOverviewQuery['vendings']['nodes'][number];
type Detail = NonNullable<VendingDetailQuery['vending']>;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Array<Node | string | null>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) if (child !== null) node.append(child);
  return node;
}

const flag = (label: string, on: boolean | null) =>
  el('span', { class: `flag ${on ? 'on' : 'off'}`, 'data-flag': label }, `${label}: ${on === null ? 'unknown' : on ? 'yes' : 'no'}`);

/** "since 14:05" (today) or "since 3 Dec, 14:05": when the gateway first saw the machine offline. */
function since(iso: string): HTMLElement {
  const at = new Date(iso);
  const clock = at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const text =
    at.toDateString() === new Date().toDateString() ? clock : `${at.toLocaleDateString([], { day: 'numeric', month: 'short' })}, ${clock}`;
  return el('time', { datetime: at.toISOString(), title: at.toLocaleString() }, text);
}

/**
 * "Offline at least since 14:05". `offlineSince` is when the gateway first read
 * the machine offline: it went offline then or before (within VENDING_POLL_MS
 * when the gateway saw it online earlier, at any time before when it was
 * already offline as the gateway started), so the time is a bound, and reads as one.
 */
function offlineNote(offlineSince: string | null): HTMLElement {
  if (!offlineSince) return el('span', { class: 'offline' }, 'Offline');
  return el(
    'span',
    {
      class: 'offline',
      title:
        'When the gateway first read it offline: it went offline then or before, ' +
        'possibly much earlier if it was already offline when the gateway started.',
    },
    'Offline at least since ',
    since(offlineSince),
  );
}

/** An amount in its currency, which it always names (a code Intl does not know is written before the number). */
export function money(amount: number | null, currency: string | null): string {
  if (amount === null) return '—';
  if (currency === null) return amount.toFixed(2);
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
  } catch {
    return `${currency} ${amount.toFixed(2)}`;
  }
}

export function machineCard(machine: Machine, selected: boolean, onSelect: (id: string) => void): HTMLLIElement {
  const button = el(
    'button',
    {
      type: 'button',
      class: 'machine',
      'aria-pressed': String(selected),
      'data-vending-id': machine.vendingId,
      'data-online': String(machine.online),
      'data-status': machine.status ?? '',
    },
    el('span', { class: 'name' }, machine.identifier ?? machine.vendingId),
    el('span', { class: 'where' }, [machine.address, machine.building, machine.countryCode].filter(Boolean).join(' · ')),
    el(
      'span',
      { class: 'flags' },
      flag('online', machine.online),
      flag('enabled', machine.enabled),
      el('span', { class: 'flag' }, `${machine.productCount ?? '?'} products`),
    ),
    machine.online === false ? offlineNote(machine.offlineSince) : null,
  );
  button.addEventListener('click', () => onSelect(machine.vendingId));
  return el('li', {}, button);
}

export function machineDetail(detail: Detail): HTMLElement {
  const products = el('ul', { class: 'products' });
  for (const product of detail.products ?? []) {
    const image = el('img', { src: product.productThumbnail ?? '', alt: '', loading: 'lazy' });
    image.addEventListener('error', () => image.removeAttribute('src'), { once: true });
    products.append(
      el(
        'li',
        { class: 'product' },
        image,
        el('span', {}, product.productName ?? product.productId),
        el('span', {}, `${money(product.productPrice, detail.currency)} × ${product.quantity ?? '?'}`),
      ),
    );
  }
  // The currency the gateway counts this machine's sales in (`currency`), not the service's `currencyCode` as sent,
  // which may be missing, numeric or in lower case: prices and sales then name the same currency.
  return el(
    'div',
    {},
    el('p', { class: 'hint' }, [detail.address, detail.building].filter(Boolean).join(' · ')),
    el('p', { class: 'hint', 'data-currency': detail.currency }, `Prices and sales in ${detail.currency}`),
    products,
  );
}

export function feedItem(event: TransactionEvent): HTMLLIElement {
  const lines = event.products.map((p) => `${p.quantity ?? 1} × ${p.productName ?? p.productId}`).join(', ');
  const total = event.transaction?.total ?? event.products.reduce((sum, p) => sum + (p.lineTotal ?? 0), 0);
  return el(
    'li',
    { class: 'event', 'data-event-id': event.eventId, 'data-transaction-id': event.transactionId },
    el('div', { class: 'head' }, el('span', { class: 'status' }, event.status), el('span', {}, money(total, event.currency))),
    el('div', {}, lines || 'no products'),
    el('div', { class: 'when' }, `${new Date(event.receivedAt).toLocaleTimeString()} · ${event.transactionId.slice(0, 8)}`),
  );
}
