import ms from 'ms';

/**
 * Milliseconds from a number of ms or a duration string ('200ms', '5m', '7 days': the `ms` package, as the
 * Temporal SDK reads them); undefined when it is neither. Signs are kept: callers decide what is allowed.
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const parsed = ms(value.trim() as ms.StringValue) as number | undefined;
  return typeof parsed === 'number' && Number.isFinite(parsed) ? parsed : undefined;
}

const UNITS: [string, number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['min', 60_000],
  ['s', 1_000],
];

/** A duration for people, three significant digits in the largest unit that fits: 200 ms, 1.5 s, 4.2 min, 7 d. */
export function formatDuration(milliseconds: number): string {
  const abs = Math.abs(milliseconds);
  for (const [unit, size] of UNITS) {
    if (abs >= size) return `${Number((milliseconds / size).toPrecision(3))} ${unit}`;
  }
  return `${Number(milliseconds.toPrecision(3))} ms`;
}
