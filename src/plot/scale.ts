export interface AxisSpec {
  label: string;
  /** Default `linear`. */
  scale?: 'linear' | 'log';
  /** Linear axes only: stretch the domain to include 0. Default false. */
  includeZero?: boolean;
  /** Linear axes only: ticks on whole numbers, for counts such as attempts. Default false. */
  integer?: boolean;
  /** Candidate tick values (e.g. DURATION_TICKS); the domain snaps to the ones around the data. Default: 1-2-5 steps. */
  ticks?: readonly number[];
  /** Tick label. Default: the number with thousands separators. */
  format?: (value: number) => string;
}

/** An axis fitted to data: where a value goes on [0, 1], and the ticks to draw. */
export interface Scale {
  position: (value: number) => number;
  ticks: number[];
  format: (value: number) => string;
  log: boolean;
}

/** Human steps for durations in ms: 1 ms … 30 d. */
export const DURATION_TICKS: readonly number[] = [
  1,
  2,
  5,
  10,
  20,
  50,
  100,
  200,
  500,
  1e3,
  2e3,
  5e3,
  10e3,
  20e3,
  30e3,
  60e3,
  2 * 60e3,
  5 * 60e3,
  10 * 60e3,
  20 * 60e3,
  30 * 60e3,
  3_600e3,
  2 * 3_600e3,
  6 * 3_600e3,
  12 * 3_600e3,
  86_400e3,
  2 * 86_400e3,
  7 * 86_400e3,
  30 * 86_400e3,
];

const MAX_TICKS = 9;

/** A scale for `values` (non-positive values are ignored on a log axis). */
export function fitScale(spec: AxisSpec, values: number[]): Scale {
  const log = spec.scale === 'log';
  let data = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (spec.includeZero && !log) data = [...data, 0];
  if (data.length === 0) data = log ? [1, 10] : [0, 1];
  let lo = Math.min(...data);
  let hi = Math.max(...data);
  if (lo === hi) [lo, hi] = log ? [lo / 2, hi * 2] : [lo - 1, hi + 1];
  // room around the data on a log axis, where snapping to a tick can leave none
  if (log) [lo, hi] = [lo / 1.5, hi * 1.2];

  const candidates = spec.ticks
    ? [...spec.ticks].sort((a, b) => a - b)
    : log
      ? logSteps(lo, hi)
      : linearSteps(lo, hi, spec.integer ?? false);
  const below = candidates.filter((t) => t <= lo);
  const above = candidates.filter((t) => t >= hi);
  const min = below.length ? below[below.length - 1]! : lo;
  const max = above.length ? above[0]! : hi;
  const ticks = thin(candidates.filter((t) => t >= min && t <= max));
  const f = log ? Math.log10 : (v: number) => v;
  const position = (v: number) => (f(v) - f(min)) / (f(max) - f(min));
  return { position, ticks, format: spec.format ?? ((v) => v.toLocaleString('en-US')), log };
}

/** Multiples of the 1-2-5 step that gives at most MAX_TICKS ticks. */
function linearSteps(lo: number, hi: number, integer: boolean): number[] {
  const raw = (hi - lo) / (MAX_TICKS - 2);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const nice = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const step = integer ? Math.max(1, Math.round(nice)) : nice;
  const steps: number[] = [];
  for (let t = Math.floor(lo / step) * step; t < hi + step; t += step) steps.push(Number(t.toPrecision(12)));
  return steps;
}

/** 1-2-5 in every decade around the data. */
function logSteps(lo: number, hi: number): number[] {
  const steps: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) steps.push(Number((m * 10 ** e).toPrecision(12)));
  }
  return steps;
}

/** Every k-th tick, keeping both ends' neighbourhood, so labels do not collide. */
function thin(ticks: number[]): number[] {
  if (ticks.length <= MAX_TICKS) return ticks;
  const k = Math.ceil(ticks.length / MAX_TICKS);
  return ticks.filter((_, i) => i % k === 0);
}
