import { createHash } from 'node:crypto';

/*
 * Images the gateway draws itself, so the dashboard needs no other host: the
 * demo's product thumbnails (the memory backend's `productThumbnail` names
 * `/dashboard/products/<name>.svg`) and the favicon. A thumbnail is a tile in
 * a colour of its own with the product's initials, from its name alone.
 */

/** A thumbnail's file name: lower-case words joined by "-", as the demo names them. */
const THUMBNAIL = /^([a-z0-9]+(?:-[a-z0-9]+){0,11})\.svg$/;

/** The SVG of the thumbnail `file` (`cold-brew-coffee-250ml.svg`), or undefined for a name no thumbnail has. */
export function productThumbnail(file: string): string | undefined {
  const match = THUMBNAIL.exec(file);
  if (!match || file.length > 96) return undefined;
  const words = match[1]!.split('-').filter((word) => /^[a-z]/.test(word));
  const initials = (
    words
      .slice(0, 2)
      .map((word) => word[0]!.toUpperCase())
      .join('') || '?'
  ).slice(0, 2);
  const hue = createHash('sha1').update(match[1]!).digest()[0]! * (360 / 256);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="80" height="80" viewBox="0 0 80 80" role="img" aria-label="${initials}">
<rect width="80" height="80" rx="14" fill="hsl(${hue.toFixed(0)} 55% 88%)"/>
<text x="40" y="50" font-family="system-ui, sans-serif" font-size="28" font-weight="700" text-anchor="middle" ` +
    `fill="hsl(${hue.toFixed(0)} 45% 30%)">${initials}</text>
</svg>
`
  );
}

/** The favicon: a vending machine's front, in the dashboard's accent colour. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect x="10" y="4" width="44" height="56" rx="6" fill="#2457c5"/>
<rect x="16" y="10" width="22" height="34" rx="2" fill="#e6edfb"/>
<rect x="42" y="12" width="6" height="4" rx="1" fill="#e6edfb"/>
<rect x="42" y="20" width="6" height="10" rx="1" fill="#7d9be0"/>
<rect x="16" y="48" width="32" height="6" rx="2" fill="#1d2330"/>
</svg>
`;
