/**
 * The picture of one endpoint over time: attempts per second, ok and failed, with the guide's downtime
 * shaded. Glitches and reconnections are not shaded: they are not downtime.
 */
// the figure module itself, not the plot index: that one brings file output (Node) along, and this folder
// stays free of Node so that its ledger and timeline can be imported by workflows
import { PALETTE, type BandSeries, type Figure, type LineSeries } from './figure';
import type { AxisSpec } from './scale';
import { formatDuration } from '../policy/duration';
import type { EndpointDowntimeReport, TimelineBucket } from '../endpoints/types';

export interface EndpointTimelineFigure {
  /** The endpoint's name, for the title (e.g. its host:port). */
  endpoint: string;
  timeline: readonly TimelineBucket[];
  report: EndpointDowntimeReport;
  /** The window shown, epoch ms. Default: from the earliest to the latest attempt or downtime. */
  from?: number;
  to?: number;
}

/** Steps between time ticks, in s: the first that gives at most MAX_TIME_TICKS ticks is taken. */
const TIME_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200, 86_400];
const MAX_TIME_TICKS = 8;
const DOWNTIME = { name: 'downtime', color: PALETTE[6] };

/** A figure for `renderFigure` (and `writePlot`): one panel, attempts per second and downtime shaded. */
export function endpointTimelineFigure({ endpoint, timeline, report, from, to }: EndpointTimelineFigure): Figure {
  const spells = downtimeSpells(report);
  const [lo, hi] = windowOf(timeline, spells, from, to);
  const buckets = timeline.filter((b) => b.second >= lo && b.second <= hi);
  const top = Math.max(1, ...buckets.map((b) => Math.max(b.ok, b.failed)));
  const lines: LineSeries[] = [
    { name: 'ok', color: PALETTE[2], points: zeroFilled(buckets, (b) => b.ok) },
    { name: 'failed', color: PALETTE[1], points: zeroFilled(buckets, (b) => b.failed) },
  ];
  const bands = shadedSpans(spells, lo, hi, top, DOWNTIME);
  return {
    title: `${endpoint}: attempts per second and downtime`,
    subtitle: subtitleOf(report),
    panels: [
      {
        x: timeAxis(lo, hi),
        y: { label: 'attempts per second', includeZero: true, integer: true },
        bands,
        lines,
      },
    ],
    notes: [
      'Seconds without attempts are drawn at 0. "failed" counts every attempt that did not get through, client errors too; those do not make downtime (the endpoint answered).',
      ...(report.complete ? [] : [`The ledger no longer keeps every downtime period since ${report.since}: older ones are missing here.`]),
    ],
    panelWidth: 900,
    panelHeight: 420,
  };
}

/** Spans of time ([from, to] in epoch seconds) shaded from 0 to `top`, clipped to the window [lo, hi]. */
export function shadedSpans(
  spans: [number, number][],
  lo: number,
  hi: number,
  top: number,
  series: { name: string; color: string },
): BandSeries[] {
  return spans
    .map(([a, b]): [number, number] => [Math.max(a, lo), Math.min(b, hi)])
    .filter(([a, b]) => a <= b)
    .map(([a, b]) => ({
      ...series,
      points: [
        [a, 0, top],
        [b, 0, top],
      ],
    }));
}

/** A time axis over [lo, hi] (epoch seconds), in UTC, ticks on round clock times. */
export function timeAxis(lo: number, hi: number): AxisSpec {
  return {
    label: `time (UTC), from ${new Date(lo * 1000).toISOString().slice(0, 19).replace('T', ' ')}`,
    ticks: timeTicks(lo, hi),
    format: clockFormat(hi - lo),
  };
}

/** Downtime periods and the current spell when it counts, as [from, to] in epoch seconds. */
function downtimeSpells(report: EndpointDowntimeReport): [number, number][] {
  const spells = report.periods.map((p): [number, number] => [Date.parse(p.from) / 1000, Date.parse(p.to) / 1000]);
  const current = report.current;
  if (current?.countsAsDowntime) {
    const since = Date.parse(current.since) / 1000;
    spells.push([since, since + current.durationMs / 1000]);
  }
  return spells;
}

/** The window in epoch seconds: what was asked, else what the data spans. */
function windowOf(timeline: readonly TimelineBucket[], spells: [number, number][], from?: number, to?: number): [number, number] {
  const xs = [...timeline.map((b) => b.second), ...spells.flat()];
  const lo = from !== undefined ? from / 1000 : xs.length ? Math.min(...xs) : 0;
  const hi = to !== undefined ? to / 1000 : xs.length ? Math.max(...xs) : lo;
  return [lo, Math.max(lo, hi)];
}

/**
 * The buckets as a line that drops to 0 where seconds had no attempts: a line straight across a gap would
 * say there were attempts all along. Only the gap's edges are added, not every empty second.
 */
export function zeroFilled<B extends { second: number }>(buckets: readonly B[], value: (b: B) => number): [number, number][] {
  const points: [number, number][] = [];
  let previous: number | undefined;
  for (const b of buckets) {
    if (previous !== undefined && b.second - previous > 1) {
      points.push([previous + 1, 0]);
      if (b.second - previous > 2) points.push([b.second - 1, 0]);
    }
    points.push([b.second, value(b)]);
    previous = b.second;
  }
  return points;
}

/** Ticks on round clock times (every 10 s, 5 min, 1 h, …) around [lo, hi]. */
function timeTicks(lo: number, hi: number): number[] {
  const span = Math.max(hi - lo, 1);
  const step = TIME_STEPS_S.find((s) => span / s <= MAX_TIME_TICKS) ?? Math.ceil(span / MAX_TIME_TICKS / 86_400) * 86_400;
  const ticks: number[] = [];
  for (let t = Math.floor(lo / step) * step; t <= Math.ceil(hi / step) * step; t += step) ticks.push(t);
  return ticks;
}

/** Time of day, with the date when the window spans days. */
function clockFormat(spanS: number): (second: number) => string {
  return (second) => {
    const stamp = new Date(second * 1000).toISOString();
    return spanS >= 86_400 ? stamp.slice(5, 16).replace('T', ' ') : stamp.slice(11, 19);
  };
}

function subtitleOf(report: EndpointDowntimeReport): string[] {
  const current = report.current?.countsAsDowntime ? ', one of them going on' : '';
  const count = report.periods.length + (current ? 1 : 0);
  return [
    `Shaded: downtime as the Bosch IoT Hub retry guide defines it, sending not possible for longer than ${formatDuration(report.thresholdMs)}, ` +
      `unless it was a reconnection (only connection failures, at least ${report.reconnectAttempts} attempts within ${formatDuration(report.reconnectWindowMs)}).`,
    `Since ${report.since}: ${formatDuration(report.totalMs)} of downtime in ${count} ${count === 1 ? 'period' : 'periods'}${current}. ` +
      `Not downtime, since the ledger opened: ${plural(report.glitches, 'glitch', 'glitches')} (up to ${formatDuration(report.thresholdMs)}), ${plural(report.reconnections, 'reconnection', 'reconnections')}.`,
  ];
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
