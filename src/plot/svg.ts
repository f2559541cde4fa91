/** Attribute values; undefined attributes are left out. */
export type Attrs = Record<string, string | number | undefined>;

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** One SVG element as text; children are already-rendered markup, except for `text`, which escapes its content. */
export function el(name: string, attrs: Attrs, ...children: string[]): string {
  const a = Object.entries(attrs)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${escapeXml(typeof v === 'number' ? String(round(v)) : v!)}"`)
    .join('');
  return children.length ? `<${name}${a}>${children.join('')}</${name}>` : `<${name}${a}/>`;
}

export function text(content: string, attrs: Attrs): string {
  return el('text', attrs, escapeXml(content));
}

/** Two decimals are finer than a pixel and keep files small and diffs stable. */
export function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** A path through the points, in order. */
export function pathOf(points: [number, number][]): string {
  return points.map(([x, y], i) => `${i ? 'L' : 'M'}${round(x)},${round(y)}`).join('');
}
