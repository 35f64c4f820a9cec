import { refuse } from '../../refusals/refusals.js';
import { builder } from '../builder.js';
import { VendingRef, type VendingInView } from '../refs.js';
import { fieldsOf, type Sdl } from '../field-check.js';

/*
 * The contract's vending list has no paging, filtering or ordering (part 4,
 * "Gaps"), so the gateway pages the full list itself, in the upstream's order.
 * A cursor names the last vending seen, so a page stays right when vendings
 * are added before it.
 */

/** Largest page a client may ask for. */
export const MAX_PAGE_SIZE = 1000;

export interface VendingFilterValue {
  online?: boolean | null;
  enabled?: boolean | null;
  status?: string | null;
  countryCode?: string | null;
}

export const VendingFilterInput = builder.inputType('VendingFilter', {
  description: 'Selects vendings; every field given must match.',
  fields: (t) =>
    fieldsOf<Required<Sdl.VendingFilter>>()({
      online: t.boolean({ description: 'Only vendings whose `online` equals this.' }),
      enabled: t.boolean({ description: 'Only vendings whose `enabled` equals this.' }),
      status: t.string({ description: 'Only vendings with exactly this status.' }),
      countryCode: t.string({ description: 'Only vendings in this country (compared without regard to case).' }),
    }),
});

interface Edge {
  cursor: string;
  node: VendingInView;
}

export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export interface VendingConnection {
  edges: Edge[];
  pageInfo: PageInfo;
  totalCount: number;
}

const cursorPrefix = 'vending:';
export const encodeCursor = (vendingId: string): string => Buffer.from(cursorPrefix + vendingId).toString('base64url');

function decodeCursor(cursor: string): string {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!decoded.startsWith(cursorPrefix)) throw refuse.notAListCursor(cursor);
  return decoded.slice(cursorPrefix.length);
}

function matches(filter: VendingFilterValue, { vending }: VendingInView): boolean {
  const same = (wanted: unknown, actual: unknown) => wanted === null || wanted === undefined || wanted === actual;
  return (
    same(filter.online, vending.online) &&
    same(filter.enabled, vending.enabled) &&
    same(filter.status, vending.status) &&
    same(filter.countryCode?.toUpperCase(), vending.countryCode?.toUpperCase())
  );
}

export function paginate(
  all: VendingInView[],
  filter: VendingFilterValue | undefined,
  first: number | undefined,
  after: string | undefined,
): VendingConnection {
  if (first !== undefined && (first < 0 || first > MAX_PAGE_SIZE)) {
    throw refuse.firstOutOfRange(MAX_PAGE_SIZE, first);
  }
  const selected = filter ? all.filter((item) => matches(filter, item)) : all;
  let start = 0;
  if (after !== undefined) {
    const afterId = decodeCursor(after);
    const index = selected.findIndex(({ vending }) => vending.vendingId === afterId);
    if (index < 0) throw refuse.afterNotInList(after);
    start = index + 1;
  }
  const end = first === undefined ? selected.length : Math.min(selected.length, start + first);
  const edges = selected.slice(start, end).map((node) => ({ cursor: encodeCursor(node.vending.vendingId), node }));
  return {
    edges,
    totalCount: selected.length,
    pageInfo: {
      hasNextPage: end < selected.length,
      hasPreviousPage: start > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

export const PageInfoRef = builder.objectRef<PageInfo>('PageInfo').implement({
  description: 'Where a page of a connection stands in the whole list.',
  fields: (t) =>
    fieldsOf<Sdl.PageInfo>()({
      hasNextPage: t.exposeBoolean('hasNextPage', { description: 'Whether items follow this page.' }),
      hasPreviousPage: t.exposeBoolean('hasPreviousPage', { description: 'Whether items precede this page.' }),
      startCursor: t.exposeString('startCursor', {
        nullable: true,
        description: 'Cursor of the first item of the page; null for an empty page.',
      }),
      endCursor: t.exposeString('endCursor', {
        nullable: true,
        description: 'Cursor of the last item of the page: pass it as `after` for the next page.',
      }),
    }),
});

const VendingEdgeRef = builder.objectRef<Edge>('VendingEdge').implement({
  description: 'A vending and its cursor.',
  fields: (t) =>
    fieldsOf<Sdl.VendingEdge>()({
      cursor: t.exposeString('cursor', { description: 'Opaque position of this vending in the list.' }),
      node: t.field({ type: VendingRef, description: 'The vending.', resolve: (edge) => edge.node }),
    }),
});

export const VendingConnectionRef = builder.objectRef<VendingConnection>('VendingConnection').implement({
  description: 'A page of vendings.',
  fields: (t) =>
    fieldsOf<Sdl.VendingConnection>()({
      edges: t.field({ type: [VendingEdgeRef], description: 'The vendings of this page with their cursors.', resolve: (c) => c.edges }),
      nodes: t.field({ type: [VendingRef], description: 'The vendings of this page.', resolve: (c) => c.edges.map((edge) => edge.node) }),
      pageInfo: t.field({ type: PageInfoRef, description: 'Where this page stands.', resolve: (c) => c.pageInfo }),
      totalCount: t.exposeInt('totalCount', { description: 'How many vendings match the filter, over all pages.' }),
    }),
});
