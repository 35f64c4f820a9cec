// A type alias, not an interface: it must fit the gateway's loose (index-signed) ProductLine where the webhook builder takes one.
export type ProductLine = {
  productId: string;
  productName: string;
  productPrice: number;
  productThumbnail: string;
  productSku: string;
  quantity: number;
};

export interface Transaction {
  transactionId: string;
  customerId: string;
  products: ProductLine[];
  status: string;
  [extra: string]: unknown;
}

/** UUID-shaped (the contract's identifiers are strings shown as UUIDs), stable per (kind, n). */
export const uuid = (kind: number, n: number): string => {
  const hex = (kind * 1_000_003 + n).toString(16).padStart(12, '0');
  return `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${hex}`;
};

const NAMES = [
  'Cola 0.5 l',
  'Still water 0.5 l',
  'Paprika chips 75 g',
  'Chocolate bar',
  'Cold brew coffee',
  'Orange juice',
  'Gummy bears',
  'Protein bar',
  'Iced tea',
  'Pretzels',
  'Energy drink',
  'Mint gum',
];
// Prices in quarters keep products' sums exact in binary floating point.
const CATALOG = NAMES.map((productName, i) => ({
  productId: uuid(1, i),
  productName,
  productPrice: 1 + (i % 7) * 0.25,
  productThumbnail: `https://cdn.example.com/p/${i}.png`,
  productSku: `SKU-${String(i).padStart(4, '0')}`,
}));

export const line = (i: number, quantity: number): ProductLine => ({ ...CATALOG[i % CATALOG.length]!, quantity });

const STATUSES = ['active', 'pending', 'completed'];

export const transactions: Transaction[] = Array.from({ length: 200 }, (_, n) => ({
  transactionId: uuid(2, n),
  customerId: uuid(3, n % 37),
  products: Array.from({ length: 1 + (n % 4) }, (_, k) => line(n + k * 5, 1 + ((n + k) % 3))),
  status: STATUSES[n % STATUSES.length]!,
  // Fields the contract does not name: the gateway must carry them, so they cost what they would in real life.
  terminalId: `T-${1000 + (n % 50)}`,
  createdAt: new Date(Date.UTC(2026, 0, 1 + (n % 28), 8, n % 60)).toISOString(),
}));

export const vendings = Array.from({ length: 50 }, (_, n) => ({
  vendingId: uuid(4, n),
  status: n % 10 === 9 ? 'maintenance' : 'active',
  online: n % 7 !== 3,
  enabled: n % 11 !== 5,
  address: `Street ${n + 1}, ${10_000 + n * 17} City`,
  building: `Building ${String.fromCharCode(65 + (n % 26))}, floor ${n % 5}`,
  countryCode: n % 2 === 0 ? 'DE' : 'GB',
  currencyCode: n % 2 === 0 ? 'EUR' : 'GBP',
  identifier: `VM-${String(n + 1).padStart(3, '0')}`,
  posId: uuid(5, n),
  products: Array.from({ length: 4 + (n % 9) }, (_, k) => line(n + k, 2 + ((n * k) % 9))),
  firmware: { version: '4.2.1' },
}));

/** The planogram view of a vending's products (the contract does not show its shape; this is one plausible grid). */
export const planogram = (products: ProductLine[]) => ({
  layout: 'grid',
  rows: Array.from({ length: Math.ceil(products.length / 4) }, (_, row) => ({
    row: row + 1,
    columns: products
      .slice(row * 4, row * 4 + 4)
      .map((p, k) => ({ column: k + 1, productId: p.productId, capacity: 10, stock: p.quantity })),
  })),
});

/** The gateway's documented total: Σ productPrice × quantity. */
export const totalOf = (t: Transaction): number => t.products.reduce((sum, p) => sum + p.productPrice * p.quantity, 0);

export const transactionById = new Map(transactions.map((t) => [t.transactionId, t]));
export const vendingById = new Map(vendings.map((v) => [v.vendingId, v]));
