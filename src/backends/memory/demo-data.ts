import type { ProductLine, Transaction } from '../../contract/contract.js';

/*
 * Deterministic demo data: the same ids and values on every start, so README
 * examples and tests can name them. A seeded generator stands in for the
 * service's database.
 */

/** mulberry32: a tiny seeded generator; quality is irrelevant, repeatability is the point. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A version-4-shaped UUID drawn from the seeded generator. */
function uuidFrom(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
  hex[12] = '4';
  hex[16] = (8 + Math.floor(random() * 4)).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

const catalogue: Array<[name: string, sku: string, eur: number]> = [
  ['Sparkling Water 500ml', 'DRK-WAT-500', 1.2],
  ['Cola Zero 330ml', 'DRK-COL-330', 1.8],
  ['Orange Juice 250ml', 'DRK-ORJ-250', 2.1],
  ['Cold Brew Coffee 250ml', 'DRK-CBC-250', 3.2],
  ['Iced Green Tea 500ml', 'DRK-IGT-500', 2.4],
  ['Sea Salt Crisps 40g', 'SNK-CRS-040', 1.5],
  ['Dark Chocolate Bar 50g', 'SNK-CHO-050', 1.9],
  ['Salted Peanuts 60g', 'SNK-PNT-060', 1.4],
  ['Oat & Honey Bar 35g', 'SNK-OAT-035', 1.3],
  ['Trail Mix 75g', 'SNK-TRM-075', 2.6],
  ['Protein Bar Vanilla 60g', 'SNK-PRV-060', 2.9],
  ['Chicken Caesar Wrap', 'FRS-WRP-CCS', 4.9],
  ['Greek Yogurt & Berries', 'FRS-YGB-150', 3.4],
  ['Apple Slices 80g', 'FRS-APS-080', 1.6],
  ['Mint Gum 10pcs', 'SNK-GUM-010', 0.9],
  ['Energy Drink 250ml', 'DRK-ENG-250', 2.2],
];

interface Site {
  countryCode: string;
  currencyCode: string;
  /** Local price per euro of catalogue price, rounded to the currency's cents. */
  rate: number;
  address: string;
  building: string;
}

const sites: Site[] = [
  { countryCode: 'DE', currencyCode: 'EUR', rate: 1, address: 'Friedrichstraße 68, 10117 Berlin', building: 'Quartier 205, Lobby' },
  { countryCode: 'DE', currencyCode: 'EUR', rate: 1, address: 'Hauptbahnhof 1, 20099 Hamburg', building: 'Concourse B' },
  {
    countryCode: 'GB',
    currencyCode: 'GBP',
    rate: 0.86,
    address: '1 Canada Square, London E14 5AB',
    building: 'One Canada Square, Floor 12',
  },
  { countryCode: 'GB', currencyCode: 'GBP', rate: 0.86, address: 'Deansgate 100, Manchester M3 2GP', building: 'Gym, basement' },
  {
    countryCode: 'US',
    currencyCode: 'USD',
    rate: 1.08,
    address: '350 Fifth Avenue, New York, NY 10118',
    building: 'Empire State Building, Level 2',
  },
  {
    countryCode: 'US',
    currencyCode: 'USD',
    rate: 1.08,
    address: '1 Market Street, San Francisco, CA 94105',
    building: 'Spear Tower, Cafeteria',
  },
  {
    countryCode: 'ES',
    currencyCode: 'EUR',
    rate: 1,
    address: 'Paseo de la Castellana 259, 28046 Madrid',
    building: 'Torre Cristal, Planta 5',
  },
  { countryCode: 'SE', currencyCode: 'SEK', rate: 11.5, address: 'Vasagatan 10, 111 20 Stockholm', building: 'Centralstationen, Hall' },
];

/** Machine states, mixed on purpose so filters have something to select. */
const machineStates: Array<{ status: string; online: boolean; enabled: boolean }> = [
  { status: 'active', online: true, enabled: true },
  { status: 'active', online: true, enabled: true },
  { status: 'active', online: false, enabled: true },
  { status: 'maintenance', online: true, enabled: false },
  { status: 'active', online: true, enabled: true },
  { status: 'inactive', online: false, enabled: false },
  { status: 'active', online: true, enabled: true },
  { status: 'maintenance', online: false, enabled: true },
];

const transactionStatuses = ['active', 'pending', 'completed', 'completed', 'completed', 'cancelled', 'refunded'];

export interface DemoSlot {
  /** Tray letter and column, as printed on the machine's front (A1, A2, …). */
  position: string;
  capacity: number;
  product: ProductLine;
}

export interface DemoVending {
  vendingId: string;
  status: string;
  online: boolean;
  enabled: boolean;
  address: string;
  building: string;
  countryCode: string;
  currencyCode: string;
  identifier: string;
  posId: string;
  slots: DemoSlot[];
}

export interface DemoData {
  vendings: DemoVending[];
  transactions: Transaction[];
}

const slug = (name: string): string =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/-$/, '');

const localPrice = (eur: number, rate: number): number => Math.round(eur * rate * 100) / 100;

export function createDemoData(seed = 20261122): DemoData {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const productIds = catalogue.map(() => uuidFrom(random));

  const productLine = (index: number, site: Site, quantity: number): ProductLine => {
    const [name, sku, eur] = catalogue[index] as (typeof catalogue)[number];
    return {
      productId: productIds[index] as string,
      productName: name,
      productPrice: localPrice(eur, site.rate),
      // Drawn by the gateway itself (src/dashboard/demo-images.ts): a demo shows its thumbnails with no other host.
      productThumbnail: `/dashboard/products/${slug(name)}.svg`,
      productSku: sku,
      quantity,
    };
  };

  const vendings = sites.map((site, v): DemoVending => {
    const state = machineStates[v % machineStates.length] as (typeof machineStates)[number];
    const slotCount = 6 + (v % 3) * 2;
    const first = (v * 3) % catalogue.length;
    const slots = Array.from({ length: slotCount }, (_, s): DemoSlot => ({
      position: `${String.fromCharCode(65 + Math.floor(s / 4))}${(s % 4) + 1}`,
      capacity: 8,
      product: productLine((first + s) % catalogue.length, site, 1 + Math.floor(random() * 8)),
    }));
    return {
      vendingId: uuidFrom(random),
      ...state,
      address: site.address,
      building: site.building,
      countryCode: site.countryCode,
      currencyCode: site.currencyCode,
      identifier: `VM-${site.countryCode}-${String(101 + v).padStart(4, '0')}`,
      posId: uuidFrom(random),
      slots,
    };
  });

  const transactions = Array.from({ length: 40 }, (_, t): Transaction => {
    const machine = vendings[t % vendings.length] as DemoVending;
    const site = sites[t % sites.length] as Site;
    const lines = 1 + Math.floor(random() * 3);
    const chosen = new Set<number>();
    while (chosen.size < lines) chosen.add(Math.floor(random() * machine.slots.length));
    return {
      transactionId: uuidFrom(random),
      customerId: uuidFrom(random),
      // The machine it was sold at and that machine's currency, as a service that links them sends (contract/currency.ts).
      vendingId: machine.vendingId,
      currencyCode: machine.currencyCode,
      status: t === 0 ? 'active' : pick(transactionStatuses),
      products: [...chosen].map((slot) => {
        const product = (machine.slots[slot] as DemoSlot).product;
        return { ...productLine(productIds.indexOf(product.productId), site, 1 + Math.floor(random() * 2)) };
      }),
    };
  });

  return { vendings, transactions };
}
