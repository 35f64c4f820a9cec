import type { ProductLine, Vending } from '../../contract/contract.js';
import type { DemoSlot, DemoVending } from './demo-data.js';

/*
 * How the memory backend answers the `products` query parameter. The contract
 * leaves the planogram shape unknown (part 2, "Gaps"); this one groups slots by
 * tray so a dashboard can draw the machine's front.
 */

export type ProductsShape = 'flat' | 'planogram';

function flatProducts(slots: DemoSlot[]): ProductLine[] {
  return slots.map((slot) => ({ ...slot.product }));
}

function planogram(slots: DemoSlot[]): { trays: Array<{ tray: string; slots: DemoSlot[] }> } {
  const trays = new Map<string, DemoSlot[]>();
  for (const slot of slots) {
    const tray = slot.position.slice(0, 1);
    trays.set(tray, [...(trays.get(tray) ?? []), { ...slot, product: { ...slot.product } }]);
  }
  return { trays: [...trays].map(([tray, traySlots]) => ({ tray, slots: traySlots })) };
}

export function renderVending(machine: DemoVending, shape: ProductsShape): Vending {
  const { slots, ...fields } = machine;
  return { ...fields, products: shape === 'flat' ? flatProducts(slots) : planogram(slots) };
}
