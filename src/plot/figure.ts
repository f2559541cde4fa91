import { fitScale, type AxisSpec, type Scale } from './scale';
import { el, pathOf, text } from './svg';

/** A series drawn as a line through its points, with a dot on each. */
export interface LineSeries {
  name: string;
  color: string;
  points: [x: number, y: number][];
  /** Default false. */
  dashed?: boolean;
  /** A label written beside each point, e.g. its value; none by default. */
  pointLabel?: (x: number, y: number) => string;
}

/** A shaded range per x, e.g. the spread between the fastest and the 95th percentile. */
export interface BandSeries {
  name: string;
  color: string;
  points: [x: number, low: number, high: number][];
}

/** A labelled horizontal reference line, e.g. a time limit. */
export interface Rule {
  y: number;
  label: string;
  color: string;
}

export interface Panel {
  title?: string;
  x: AxisSpec;
  y: AxisSpec;
  lines?: LineSeries[];
  bands?: BandSeries[];
  rules?: Rule[];
}

export interface Figure {
  title: string;
  /** Lines under the title that say what the reader is looking at. */
  subtitle?: string[];
  /** Panels side by side, sharing one legend. */
  panels: Panel[];
  /** Small print under the panels. */
  notes?: string[];
  /** Size of one panel in px. Default 620 × 400. */
  panelWidth?: number;
  panelHeight?: number;
}

/** Colour-blind-safe (Okabe & Ito), in the order series usually want them. */
export const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000'] as const;

const FONT = 'DejaVu Sans, Helvetica, Arial, sans-serif';
const MARGIN = { left: 78, right: 64, top: 30, bottom: 52 };
const PAD = 24;
const LINE_HEIGHT = 18;
/** Average width of a character of DejaVu Sans, in em: enough to lay out legends and wrap lines. */
const CHAR_EM = 0.55;
/** A white outline under text drawn over data, so that it stays legible where it crosses a line. */
const HALO = { stroke: 'white', 'stroke-width': 3, 'stroke-linejoin': 'round', 'paint-order': 'stroke' };

/** A complete, self-contained SVG document. */
export function renderFigure(figure: Figure): string {
  const pw = figure.panelWidth ?? 620;
  const ph = figure.panelHeight ?? 400;
  const width = PAD * 2 + pw * figure.panels.length;
  const subtitle = (figure.subtitle ?? []).flatMap((line) => wrap(line, (width - 2 * PAD) / (13 * CHAR_EM)));
  const notes = (figure.notes ?? []).flatMap((line) => wrap(line, (width - 2 * PAD) / (12 * CHAR_EM)));
  const legendY = PAD + 24 + subtitle.length * LINE_HEIGHT + 10;
  const panelsY = legendY + 22;
  const height = panelsY + ph + notes.length * LINE_HEIGHT + PAD;

  const parts = [
    el('rect', { width, height, fill: 'white' }),
    text(figure.title, { x: PAD, y: PAD + 12, 'font-size': 19, 'font-weight': 'bold' }),
    ...subtitle.map((line, i) => text(line, { x: PAD, y: PAD + 36 + i * LINE_HEIGHT, 'font-size': 13, fill: '#444' })),
    legend(figure.panels, PAD, legendY),
    ...figure.panels.map((panel, i) => el('g', { transform: `translate(${PAD + i * pw},${panelsY})` }, renderPanel(panel, pw, ph))),
    ...notes.map((line, i) => text(line, { x: PAD, y: panelsY + ph + 14 + i * LINE_HEIGHT, 'font-size': 12, fill: '#555' })),
  ];
  return `<?xml version="1.0" encoding="UTF-8"?>\n${el(
    'svg',
    { xmlns: 'http://www.w3.org/2000/svg', width, height, viewBox: `0 0 ${width} ${height}`, 'font-family': FONT },
    ...parts,
  )}\n`;
}

/** One swatch per series name across all panels. */
function legend(panels: Panel[], x0: number, y: number): string {
  const seen = new Set<string>();
  const items: string[] = [];
  let x = x0;
  const add = (name: string, swatch: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    items.push(el('g', { transform: `translate(${x},${y})` }, swatch, text(name, { x: 30, y: 4, 'font-size': 13 })));
    x += 30 + name.length * 13 * CHAR_EM + 28;
  };
  for (const panel of panels) {
    for (const band of panel.bands ?? [])
      add(
        band.name,
        el('rect', {
          x: 0,
          y: -7,
          width: 24,
          height: 14,
          fill: band.color,
          'fill-opacity': 0.25,
          stroke: band.color,
          'stroke-opacity': 0.5,
        }),
      );
    for (const line of panel.lines ?? []) {
      add(
        line.name,
        el('line', {
          x1: 0,
          x2: 24,
          y1: 0,
          y2: 0,
          stroke: line.color,
          'stroke-width': 2.5,
          'stroke-dasharray': line.dashed ? '6 4' : undefined,
        }) + el('circle', { cx: 12, cy: 0, r: 3.5, fill: line.color }),
      );
    }
  }
  return el('g', {}, ...items);
}

function renderPanel(panel: Panel, width: number, height: number): string {
  const lines = panel.lines ?? [];
  const bands = panel.bands ?? [];
  const rules = panel.rules ?? [];
  const xs = [...lines.flatMap((l) => l.points.map((p) => p[0])), ...bands.flatMap((b) => b.points.map((p) => p[0]))];
  const ys = [
    ...lines.flatMap((l) => l.points.map((p) => p[1])),
    ...bands.flatMap((b) => b.points.flatMap((p) => [p[1], p[2]])),
    ...rules.map((r) => r.y),
  ];
  const xScale = fitScale(panel.x, xs);
  const yScale = fitScale(panel.y, ys);
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const X = (v: number) => MARGIN.left + xScale.position(v) * plotW;
  const Y = (v: number) => MARGIN.top + (1 - yScale.position(v)) * plotH;
  const visible = (y: number) => !yScale.log || y > 0;
  const parts: string[] = [];

  if (panel.title) parts.push(text(panel.title, { x: MARGIN.left, y: 16, 'font-size': 15, 'font-weight': 'bold' }));
  parts.push(...axes(xScale, yScale, X, Y, plotW, plotH));
  parts.push(text(panel.x.label, { x: MARGIN.left + plotW / 2, y: height - 8, 'font-size': 13, 'text-anchor': 'middle' }));
  const yMid = MARGIN.top + plotH / 2;
  parts.push(text(panel.y.label, { x: 16, y: yMid, 'font-size': 13, 'text-anchor': 'middle', transform: `rotate(-90 16 ${yMid})` }));

  for (const band of bands) {
    const pts = band.points.filter((p) => visible(p[1]) && visible(p[2]));
    const outline: [number, number][] = [
      ...pts.map((p): [number, number] => [X(p[0]), Y(p[2])]),
      ...[...pts].reverse().map((p): [number, number] => [X(p[0]), Y(p[1])]),
    ];
    parts.push(
      el('path', { d: `${pathOf(outline)}Z`, fill: band.color, 'fill-opacity': 0.22, stroke: band.color, 'stroke-opacity': 0.45 }),
    );
  }
  for (const rule of rules) {
    parts.push(
      el('line', {
        x1: MARGIN.left,
        x2: MARGIN.left + plotW,
        y1: Y(rule.y),
        y2: Y(rule.y),
        stroke: rule.color,
        'stroke-width': 1.5,
        'stroke-dasharray': '8 5',
      }),
    );
    parts.push(text(rule.label, { x: MARGIN.left + 6, y: Y(rule.y) - 6, 'font-size': 12, fill: rule.color, ...HALO }));
  }
  for (const line of lines) {
    const pts = line.points.filter((p) => visible(p[1]));
    parts.push(
      el('path', {
        d: pathOf(pts.map(([x, y]) => [X(x), Y(y)])),
        fill: 'none',
        stroke: line.color,
        'stroke-width': 2.5,
        'stroke-dasharray': line.dashed ? '6 4' : undefined,
      }),
    );
    let free = -Infinity; // where the last point label ended: labels that would overlap it are left out
    for (const [x, y] of pts) {
      parts.push(el('circle', { cx: X(x), cy: Y(y), r: 3.5, fill: line.color }));
      const label = line.pointLabel?.(x, y);
      if (label === undefined || X(x) + 7 < free) continue;
      // below and to the right: lines that rise leave that corner free
      parts.push(text(label, { x: X(x) + 7, y: Y(y) + 15, 'font-size': 11, fill: line.color, ...HALO }));
      free = X(x) + 7 + label.length * 11 * CHAR_EM + 6;
    }
  }
  return parts.join('');
}

function axes(xScale: Scale, yScale: Scale, X: (v: number) => number, Y: (v: number) => number, plotW: number, plotH: number): string[] {
  const left = MARGIN.left;
  const bottom = MARGIN.top + plotH;
  const parts: string[] = [];
  for (const t of yScale.ticks) {
    parts.push(el('line', { x1: left, x2: left + plotW, y1: Y(t), y2: Y(t), stroke: '#e3e3e3' }));
    parts.push(text(yScale.format(t), { x: left - 8, y: Y(t) + 4, 'font-size': 12, 'text-anchor': 'end', fill: '#333' }));
  }
  for (const t of xScale.ticks) {
    parts.push(el('line', { x1: X(t), x2: X(t), y1: bottom, y2: bottom + 5, stroke: '#333' }));
    parts.push(text(xScale.format(t), { x: X(t), y: bottom + 19, 'font-size': 12, 'text-anchor': 'middle', fill: '#333' }));
  }
  parts.push(
    el('path', {
      d: pathOf([
        [left, MARGIN.top],
        [left, bottom],
        [left + plotW, bottom],
      ]),
      fill: 'none',
      stroke: '#333',
    }),
  );
  return parts;
}

/** Splits a line at spaces so that no piece is longer than `maxChars`, unless one word is. */
function wrap(line: string, maxChars: number): string[] {
  const lines: string[] = [];
  let current = '';
  for (const word of line.split(' ')) {
    if (current && current.length + 1 + word.length > maxChars) {
      lines.push(current);
      current = word;
    } else current = current ? `${current} ${word}` : word;
  }
  return [...lines, current];
}
