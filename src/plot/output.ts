import { writeFile } from 'node:fs/promises';
import { Resvg } from '@resvg/resvg-js';

export type PlotFormat = 'svg' | 'png';

/** The format a plot file's name asks for, or null when it is neither .svg nor .png. */
export function plotFormat(file: string): PlotFormat | null {
  const ext = /\.(svg|png)$/i.exec(file)?.[1]?.toLowerCase();
  return ext === 'svg' || ext === 'png' ? ext : null;
}

/** Rasterises at twice the SVG's size, for sharp text; the fonts are the system's (DejaVu Sans first). */
export function svgToPng(svg: string): Buffer {
  const resvg = new Resvg(svg, {
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
    fitTo: { mode: 'zoom', value: 2 },
    background: 'white',
  });
  return resvg.render().asPng();
}

/** Writes `svg` to `file` as SVG or PNG, by the file's extension. */
export async function writePlot(file: string, svg: string): Promise<void> {
  const format = plotFormat(file);
  if (!format) throw new Error(`plot files end in .svg or .png, got ${JSON.stringify(file)}`);
  await writeFile(file, format === 'svg' ? svg : svgToPng(svg));
}
