export { renderFigure, PALETTE, type Figure, type Panel, type LineSeries, type BandSeries, type Rule } from './figure';
export { fitScale, DURATION_TICKS, type AxisSpec, type Scale } from './scale';
export { plotFormat, svgToPng, writePlot, type PlotFormat } from './output';
