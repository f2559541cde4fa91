import { InvalidInputError, type Problem } from '../errors';
import { formatDuration, parseDuration } from '../policy';
import {
  DEFAULT_VOLUME_COSTS,
  DEFAULT_VOLUME_SCENARIO,
  formatBytes,
  formatCount,
  outageAtVolume,
  type DesignFigures,
  type PerMessage,
  type VolumeCosts,
  type VolumeFigures,
  type VolumeScenario,
} from '../simulate/outage-volume';
import { wholeNumber } from './number-flags';
import { emit } from './output';
import { budgetFlags, type OutageFlags } from './simulate-outage';

/** The rates `--outage-at-volume` models when `--rate` is not given. */
export const DEFAULT_VOLUME_RATES = [1_000, 10_000, 100_000];

/** The cost flags: each sets one field of the model's costs (measured here by default; the benchmark measures them). */
export const COST_FLAGS = {
  workerRate: ['--worker-rate <n>', 'messages/s one worker delivers in batches to a healthy endpoint'],
  deliveryRate: ['--delivery-rate <n>', 'delivery workflows/s one worker runs, one per message (today)'],
  serverStarts: ['--server-starts <n>', 'workflow starts/s the server sustains'],
  serverActions: ['--server-actions <n>', 'actions/s the namespace allows'],
  deliveryEvents: ['--delivery-events <n>', "history events of a failed batch message's own delivery (today)"],
  deliveryBytes: ['--delivery-bytes <n>', "bytes of that delivery's history"],
  heldBytes: ['--held-bytes <n>', 'bytes of one held message as its hold keeps it'],
  holdEvents: ['--hold-events <n>', 'history events per held message, as measured'],
} as const satisfies Partial<Record<keyof VolumeCosts, readonly [string, string]>>;

type CostFlags = { [field in keyof typeof COST_FLAGS]?: string };

export interface VolumeFlags extends CostFlags, Pick<OutageFlags, 'budget' | 'budgetBurst' | 'maxAge' | 'json'> {
  rate?: string;
  down?: string;
  workers?: string;
  latency?: string;
  endpointRate?: string;
  endpointMaxInFlight?: string;
  probeEvery?: string;
}

/** The flags `--outage-at-volume` alone takes (its scenario and its costs); it shares --max-age and --budget with a replay. */
export const VOLUME_ONLY = [
  'rate',
  'down',
  'workers',
  'latency',
  'endpointRate',
  'endpointMaxInFlight',
  'probeEvery',
  ...(Object.keys(COST_FLAGS) as (keyof typeof COST_FLAGS)[]),
] as const;

const d = DEFAULT_VOLUME_SCENARIO;
const c = DEFAULT_VOLUME_COSTS;

/** The defaults as the help shows them, beside each flag's words. */
const COST_DEFAULTS: Record<keyof typeof COST_FLAGS, string> = {
  workerRate: `${c.workerRate}: bench/results, section 6`,
  deliveryRate: `${c.deliveryRate}: bench/results, section 6`,
  serverStarts: `${c.serverStarts}: the dev server here starts 35-90/s`,
  serverActions: `${c.serverActions}: Temporal Cloud's default`,
  deliveryEvents: `${c.deliveryEvents}: its recorded history`,
  deliveryBytes: String(c.deliveryBytes),
  heldBytes: String(c.heldBytes),
  holdEvents: "from the hold's updates, signals and release rounds",
};

/** The volume flags for `simulate`'s definition: [flags, description] in the order of the help. */
export function volumeOptions(): [string, string][] {
  return [
    [
      '--outage-at-volume',
      'model a 60 s outage at volume: today\'s design against the outage holds (docs/outage-replay.md, "An outage at volume")',
    ],
    ['--rate <list>', `volume: messages/s offered, comma-separated (default ${DEFAULT_VOLUME_RATES.join(',')})`],
    ['--down <duration>', `volume: how long the endpoint fails (default ${formatDuration(d.downMs)})`],
    ['--workers <n>', 'volume: workers (default: as many as each design needs)'],
    ['--latency <duration>', `volume: the endpoint's response time when healthy (default ${formatDuration(d.latencyMs)})`],
    ['--endpoint-rate <n>', 'volume: requests/s the endpoint takes (default: all it is sent)'],
    ['--endpoint-max-in-flight <n>', "volume: the endpoint's max-in-flight (default: none)"],
    [
      '--probe-every <duration>',
      `volume: at most one probe per worker per this long while down (default ${formatDuration(d.probeEveryMs)})`,
    ],
    ...Object.entries(COST_FLAGS).map(([field, [flag, words]]): [string, string] => [
      flag,
      `volume cost: ${words} (default ${COST_DEFAULTS[field as keyof typeof COST_FLAGS]})`,
    ]),
  ];
}

/** `redeliver simulate --outage-at-volume`: both designs at each rate, and where the hold design breaks next. */
export function simulateVolume(flags: VolumeFlags): void {
  const { rates, scenario } = parseVolumeFlags(flags);
  const figures = rates.map((rate) => outageAtVolume({ ...scenario, rate }));
  const { costs, ...rest } = scenario;
  emit(!!flags.json, { scenario: rest, costs, rates: figures }, () => volumeText(figures, scenario));
}

/** A number above 0 (decimals allowed: a measured rate), else a problem naming the flag. */
function positive(problems: Problem[], flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !(n > 0))
    problems.push({ field: flag, message: `must be a number above 0, got ${JSON.stringify(value)}` });
  return n;
}

function duration(problems: Problem[], flag: string, value: string | undefined, fallback: number, minMs: number, maxMs: number): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(value);
  if (ms === undefined || ms < minMs || ms > maxMs)
    problems.push({
      field: flag,
      message: `must be a duration from ${formatDuration(minMs)} to ${formatDuration(maxMs)}, such as 60s, got ${JSON.stringify(value)}`,
    });
  return ms ?? fallback;
}

function parseVolumeFlags(flags: VolumeFlags): { rates: number[]; scenario: Omit<VolumeScenario, 'rate'> } {
  const problems: Problem[] = [];
  const rates = flags.rate === undefined ? DEFAULT_VOLUME_RATES : flags.rate.split(',').map((r) => positive(problems, '--rate', r));
  if (rates.some((r) => r > 10_000_000)) problems.push({ field: '--rate', message: 'must be at most 10,000,000 messages/s' });
  const costs: VolumeCosts = { ...DEFAULT_VOLUME_COSTS };
  for (const field of Object.keys(COST_FLAGS) as (keyof typeof COST_FLAGS)[]) {
    const value = flags[field];
    if (value !== undefined) costs[field] = positive(problems, COST_FLAGS[field][0].split(' ')[0]!, value);
  }
  const budget = budgetFlags(flags, problems);
  if (budget === null) problems.push({ field: '--budget', message: "paces today's design: give retries per second, such as 10/s" });
  const maxAgeMs =
    flags.maxAge === undefined
      ? d.maxAgeMs
      : flags.maxAge === 'none'
        ? null
        : duration(problems, '--max-age', flags.maxAge, 0, 1_000, 366 * 86_400_000);
  const scenario: Omit<VolumeScenario, 'rate'> = {
    downMs: duration(problems, '--down', flags.down, d.downMs, 1_000, 86_400_000),
    maxAgeMs,
    budget: budget ? { perSecond: budget.perSecond, burst: Number.isNaN(budget.burst) ? d.budget.burst : budget.burst } : d.budget,
    workers: flags.workers === undefined ? null : wholeNumber(problems, '--workers', flags.workers, 1, 1_000_000),
    latencyMs: duration(problems, '--latency', flags.latency, d.latencyMs, 1, 60_000),
    endpointRate: flags.endpointRate === undefined ? null : positive(problems, '--endpoint-rate', flags.endpointRate),
    endpointMaxInFlight:
      flags.endpointMaxInFlight === undefined ? null : wholeNumber(problems, '--endpoint-max-in-flight', flags.endpointMaxInFlight, 1),
    probeEveryMs: duration(problems, '--probe-every', flags.probeEvery, d.probeEveryMs, 100, 3_600_000),
    costs,
  };
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  return { rates, scenario };
}

/** The table's rows: a name, and how to read it off one design's figures. */
const ROWS: [string, (f: DesignFigures) => string][] = [
  ['backlog (messages)', (f) => formatCount(f.backlog)],
  ['drain after recovery', (f) => (f.drainSeconds === null ? 'never' : formatDuration(f.drainSeconds * 1000))],
  ['requests while down', (f) => formatCount(f.requestsWhileDown)],
  ['expired', (f) => formatCount(f.expired)],
  ...(
    [
      ['workflow starts', 'workflowStarts'],
      ['  of them deliveries', 'deliveryStarts'],
      ['updates', 'updates'],
      ['signals', 'signals'],
      ['queries', 'queries'],
      ['activity tasks', 'activityTasks'],
      ['search-attribute upserts', 'searchAttributeUpserts'],
      ['actions', 'actions'],
      ['history events', 'historyEvents'],
    ] as [string, keyof PerMessage][]
  ).map(([name, key]): [string, (f: DesignFigures) => string] => [`${name} / message`, (f) => formatCount(f.perMessage[key])]),
  ['history bytes / message', (f) => formatBytes(f.perMessage.historyBytes)],
  ['holds', (f) => formatCount(f.holds)],
  ['workers', (f) => formatCount(f.workers)],
  ['peak actions/s', (f) => formatCount(f.peakActionsPerSecond)],
  ['peak workflow starts/s', (f) => formatCount(f.peakStartsPerSecond)],
];

function volumeText(figures: VolumeFigures[], s: Omit<VolumeScenario, 'rate'>): string[] {
  const columns = figures.flatMap((f) => [
    { head: [`${formatCount(f.rate)}/s`, 'today'], design: f.today },
    { head: ['', 'holds'], design: f.holds },
  ]);
  const cells = ROWS.map(([name, read]) => [name, ...columns.map((col) => read(col.design))]);
  const heads = [0, 1].map((i) => ['', ...columns.map((col) => col.head[i]!)]);
  const rows = [...heads, ...cells];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)) + (i ? 2 : 0));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('')
      .trimEnd();
  const maxAge = s.maxAgeMs === null ? 'no max age' : `max age ${formatDuration(s.maxAgeMs)}`;
  const k = s.costs;
  return [
    `An outage of ${formatDuration(s.downMs)} at each rate, one tenant, one endpoint answering in ${formatDuration(s.latencyMs)}; ${maxAge}; today's retry budget ${s.budget.perSecond}/s (burst ${s.budget.burst})`,
    `costs: a worker ${formatCount(k.workerRate)} messages/s in batches, ${formatCount(k.deliveryRate)} delivery workflows/s; the server ${formatCount(k.serverStarts)} starts/s, ${formatCount(k.serverActions)} actions/s; a delivery ${formatCount(k.deliveryEvents)} events, ${formatBytes(k.deliveryBytes)}; a held message ${formatBytes(k.heldBytes)}`,
    '',
    ...rows.map(line),
    '',
    ...figures.map((f) => f.breaksNext),
  ];
}
