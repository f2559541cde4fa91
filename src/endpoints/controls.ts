import type { Problem } from '../errors';
import { parseDuration } from '../policy/duration';
import type { EndpointHealthState } from './health';
import { PRIORITIES, type Priority } from './priority';

/*
 * What an operator sets on one endpoint (`redeliver endpoint set`, Redeliver.setEndpoint), kept by the
 * endpoint's workflow (endpointWorkflow) and read by every worker before it sends (EndpointAdmission).
 * Pure: the endpoint workflow imports it.
 */

/** A bound, or `off` for none; absent in EndpointSettings: the workers' default (REDELIVER_ENDPOINT_*). */
export type Bound = number | 'off';

/** One endpoint's own limits: each overrides the workers' default for it. */
export interface EndpointSettings {
  /** Attempts in flight at once to the endpoint, all workers together (first attempts, batches, retries). */
  maxInFlight?: Bound;
  /** Attempts per second to the endpoint, all workers together: at most this many in any second. */
  rate?: Bound;
  /** The circuit breaker: `on` holds attempts to a failing endpoint but one probe; `off`, the default, lets every attempt go (within the limits). */
  breaker?: 'on' | 'off';
  /** While the breaker is open: one probe at a time, and at most one per this many ms. Default DEFAULT_PROBE_EVERY_MS. */
  probeEvery?: number;
  /** Disable the endpoint once it has been failing this long (ms); `off`, the default: never by itself. */
  autoDisableAfter?: number | 'off';
  /**
   * Who goes first when the limits make slots scarce: `deadline-first`, the default, command responses before
   * events before telemetry; `fifo`: in arrival order (docs/endpoint-health.md, "Deadline-first").
   */
  priority?: Priority;
  /**
   * While the endpoint fails, a batch's messages wait in an outage hold and are released at the recovery pace
   * (`hold`), or each becomes a delivery of its own (`off`); absent: the worker's default (REDELIVER_OUTAGE_HOLD).
   */
  outage?: 'hold' | 'off';
}

export const DEFAULT_PROBE_EVERY_MS = 1_000;

/** A change to the settings: a value sets it, `null` gives the field back to the workers' default. */
export type EndpointSettingsChange = { [K in keyof EndpointSettings]?: EndpointSettings[K] | null };

/** A change as an operator gives it: a rate may be a string such as `'200/s'`, a duration one such as `'5s'` or `'1h'`. */
export type EndpointSettingsInput = Omit<EndpointSettingsChange, 'rate' | 'probeEvery' | 'autoDisableAfter'> & {
  rate?: Bound | string | null;
  probeEvery?: number | string | null;
  autoDisableAfter?: number | string | null;
};

/** The limits an attempt meets: null for none. */
export interface EndpointLimits {
  maxInFlight: number | null;
  /** Attempts per second. */
  rate: number | null;
}

export const NO_LIMITS: EndpointLimits = { maxInFlight: null, rate: null };

/** The memo field of the endpoint's workflow every worker reads (DescribeWorkflowExecution: no workflow task, unlike a query). */
export const CONTROL_MEMO = 'control';
/** How long a worker uses what it read of an endpoint's control before it reads it again (ControlCache). */
export const CONTROL_TTL_MS = 2_000;

/**
 * The circuit breaker as the endpoint's workflow judges it: open while the endpoint is failing (docs/endpoint-health.md, "Health").
 * While open, only `prober` sends, one probe at a time; none named (no worker reports to it): each worker probes.
 */
export interface BreakerState {
  open: boolean;
  /** When it opened (epoch ms): the endpoint's failing spell began. */
  since: number | null;
  prober: string | null;
}

/**
 * An endpoint paused (every attempt held, none sent, until resumed) or disabled (every attempt ends its
 * delivery as a dead letter that says so, redrivable); absent: active.
 */
export interface EndpointMode {
  state: 'paused' | 'disabled';
  reason: string;
  /** Epoch ms. */
  since: number;
  /** An operator, or the endpoint itself after failing for `autoDisableAfter`. */
  by: 'operator' | 'auto';
}

/** What an operator does to an endpoint's mode: `active` resumes a paused endpoint and enables a disabled one. */
export interface ModeChange {
  state: 'active' | 'paused' | 'disabled';
  reason?: string;
}

/** What a worker reads from an endpoint's workflow (its memo). */
export interface EndpointControl {
  settings: EndpointSettings;
  mode?: EndpointMode;
  /** Absent from endpoints whose workflow has not judged it (before the breaker, or never failing). */
  breaker?: BreakerState;
}

/** The breaker for an endpoint in `state`: open while failing, its prober the first of the workers reporting to it. */
export function breakerFor(
  settings: EndpointSettings,
  state: EndpointHealthState,
  failingSince: number | null,
  workers: string[],
): BreakerState {
  if (settings.breaker !== 'on' || state !== 'failing') return { open: false, since: null, prober: null };
  return { open: true, since: failingSince, prober: [...workers].sort()[0] ?? null };
}

/** The bounds of an endpoint's limits: attempts in flight, attempts per second. */
export const ENDPOINT_LIMITS = { maxInFlight: { min: 1, max: 100_000 }, rate: { min: 0.001, max: 1_000_000 } } as const;
const PROBE_EVERY = { min: 100, max: 3_600_000 } as const;
const KNOWN = 'known: maxInFlight, rate, breaker, probeEvery, autoDisableAfter, priority, outage';
const AUTO_DISABLE = { min: 60_000, max: 90 * 24 * 3_600_000 } as const;
const PER = { s: 1, sec: 1, second: 1, m: 60, min: 60, minute: 60, h: 3600, hour: 3600 } as const;

/** `200`, `200/s`, `12000/min`, `5/h` → per second; undefined when it is none of those. */
export function parseRate(value: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*([a-z]+))?\s*$/i.exec(value);
  if (!m) return undefined;
  const per = m[2] === undefined ? 1 : PER[m[2].toLowerCase() as keyof typeof PER];
  return per === undefined ? undefined : Number(m[1]) / per;
}

/** A bound as given (a number, `off`, or for a rate a string such as `200/s`): the value, or a problem naming `field`. */
function boundOf(field: 'maxInFlight' | 'rate', value: unknown, problems: Problem[]): Bound | null | undefined {
  if (value === undefined || value === null || value === 'off') return value as Bound | null | undefined;
  const { min, max } = ENDPOINT_LIMITS[field];
  const n = typeof value === 'string' && field === 'rate' ? parseRate(value) : typeof value === 'number' ? value : undefined;
  const whole = field === 'maxInFlight';
  if (n === undefined || !Number.isFinite(n) || n < min || n > max || (whole && !Number.isInteger(n))) {
    const what = whole ? `a whole number from ${min} to ${max}` : `attempts per second above 0 (200, "200/s", "12000/min") up to ${max}`;
    problems.push({ field, message: `must be ${what}, "off", or null for the default; got ${JSON.stringify(value)}` });
    return undefined;
  }
  return n;
}

/** A settings change checked: the change with rates in attempts per second, and every problem (each naming its field). */
export function checkSettingsChange(input: unknown): { change: EndpointSettingsChange; problems: Problem[] } {
  const problems: Problem[] = [];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { change: {}, problems: [{ field: '(settings)', message: `must be an object (${KNOWN})` }] };
  }
  const { maxInFlight, rate, breaker, probeEvery, autoDisableAfter, priority, outage, ...rest } = input as Record<string, unknown>;
  for (const key of Object.keys(rest)) problems.push({ field: key, message: `is not a known field (${KNOWN})` });
  const change: EndpointSettingsChange = {};
  const m = boundOf('maxInFlight', maxInFlight, problems);
  const r = boundOf('rate', rate, problems);
  if (m !== undefined) change.maxInFlight = m;
  if (r !== undefined) change.rate = r;
  if (breaker === null || breaker === 'on' || breaker === 'off') change.breaker = breaker;
  else if (breaker !== undefined)
    problems.push({ field: 'breaker', message: `must be "on", "off", or null for the default; got ${JSON.stringify(breaker)}` });
  const every = probeEvery === null ? null : parseDuration(probeEvery);
  if (every === null || (every !== undefined && every >= PROBE_EVERY.min && every <= PROBE_EVERY.max)) {
    if (every !== undefined) change.probeEvery = every;
  } else if (probeEvery !== undefined) {
    problems.push({
      field: 'probeEvery',
      message: `must be a duration from 100ms to 1h, or null for the default; got ${JSON.stringify(probeEvery)}`,
    });
  }
  const after = autoDisableAfter === null || autoDisableAfter === 'off' ? autoDisableAfter : parseDuration(autoDisableAfter);
  if (after === null || after === 'off' || (after !== undefined && after >= AUTO_DISABLE.min && after <= AUTO_DISABLE.max)) {
    if (after !== undefined) change.autoDisableAfter = after;
  } else if (autoDisableAfter !== undefined) {
    const message = `must be a duration from 1m to 90d, "off", or null for the default; got ${JSON.stringify(autoDisableAfter)}`;
    problems.push({ field: 'autoDisableAfter', message });
  }
  if (priority === null || PRIORITIES.includes(priority as Priority)) change.priority = priority as Priority | null;
  else if (priority !== undefined)
    problems.push({
      field: 'priority',
      message: `must be "deadline-first", "fifo", or null for the default; got ${JSON.stringify(priority)}`,
    });
  if (outage === null || outage === 'hold' || outage === 'off') change.outage = outage;
  else if (outage !== undefined)
    problems.push({ field: 'outage', message: `must be "hold", "off", or null for the default; got ${JSON.stringify(outage)}` });
  return { change, problems };
}

/** A mode change checked: every problem names its field. */
export function modeProblems(input: unknown): Problem[] {
  if (typeof input !== 'object' || input === null) return [{ field: '(mode)', message: 'must be an object { state, reason? }' }];
  const { state, reason } = input as Record<string, unknown>;
  const problems: Problem[] = [];
  if (!['active', 'paused', 'disabled'].includes(state as string))
    problems.push({ field: 'state', message: `must be active, paused or disabled; got ${JSON.stringify(state)}` });
  if (reason !== undefined && !(typeof reason === 'string' && reason.length <= 500))
    problems.push({ field: 'reason', message: 'must be a string of at most 500 characters' });
  return problems;
}

/** The mode after `change` at `now`: a change that leaves the state as it was keeps its time, with the new reason. */
export function nextMode(mode: EndpointMode | undefined, change: ModeChange, now: number, by: EndpointMode['by'] = 'operator') {
  if (change.state === 'active') return undefined;
  const reason = change.reason || (change.state === 'paused' ? 'paused by an operator' : 'disabled by an operator');
  return { state: change.state, reason, since: mode?.state === change.state ? mode.since : now, by } satisfies EndpointMode;
}

/** The settings after a change: `null` removes a field (the default applies again). */
export function applySettings(settings: EndpointSettings, change: EndpointSettingsChange): EndpointSettings {
  const next: Record<string, unknown> = { ...settings };
  for (const [key, value] of Object.entries(change)) {
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next as EndpointSettings;
}

/** The limits of an endpoint: its own settings over the workers' defaults. */
export function limitsOf(settings: EndpointSettings | undefined, defaults: EndpointLimits): EndpointLimits {
  const pick = (own: Bound | undefined, fallback: number | null) => (own === undefined ? fallback : own === 'off' ? null : own);
  return { maxInFlight: pick(settings?.maxInFlight, defaults.maxInFlight), rate: pick(settings?.rate, defaults.rate) };
}

/**
 * Whether a batch's messages to the endpoint wait in an outage hold while it fails (docs/endpoint-health.md,
 * "Outages: holds and the recovery pace"): its own `outage` setting, else the worker's default (REDELIVER_OUTAGE_HOLD).
 */
export function holdsOutages(control: EndpointControl | undefined, workerDefault: boolean): boolean {
  const own = control?.settings.outage;
  return own === undefined ? workerDefault : own === 'hold';
}

/** One worker's part of an endpoint's bound on attempts in flight: `share` of it (1/N with N workers), at least one. */
export function workerShare(maxInFlight: number, share: number): number {
  return Math.max(1, Math.floor(maxInFlight * share));
}

/** "50 in flight, 200/s", "no limits" */
export function limitsInWords(limits: EndpointLimits): string {
  const parts = [
    ...(limits.maxInFlight !== null ? [`${limits.maxInFlight} in flight`] : []),
    ...(limits.rate !== null ? [`${+limits.rate.toFixed(3)}/s`] : []),
  ];
  return parts.length ? parts.join(', ') : 'no limits';
}
