import type { Command } from 'commander';
import type { EndpointControl, EndpointSettingsChange } from '../endpoints/controls';
import { checkSettingsChange, DEFAULT_PROBE_EVERY_MS, limitsInWords, limitsOf, NO_LIMITS } from '../endpoints/controls';
import type { EndpointHandle } from '../client/endpoint-handle';
import { paceInWords } from '../endpoints/pace';
import { DEFAULT_PRIORITY } from '../endpoints/priority';
import { formatDuration } from '../policy/duration';
import { InvalidInputError, type Problem } from '../errors';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { emit } from './output';

interface SetFlags extends ConnectionFlags {
  maxInFlight?: string;
  rate?: string;
  breaker?: string;
  probeEvery?: string;
  autoDisableAfter?: string;
  priority?: string;
  outage?: string;
  json?: boolean;
}

/** `redeliver endpoint …`: one endpoint's controls (the group is shared with `endpoint export`). */
export function registerEndpoint(program: Command): void {
  const endpoint = program.commands.find((c) => c.name() === 'endpoint') ?? program.command('endpoint');
  endpoint.description('one endpoint: its limits (set, show), its mode (pause, resume, disable) and its records (export)');
  withConnectionFlags(
    endpoint
      .command('set <endpoint>')
      .description('set the limits of every attempt to an endpoint, all workers together (first attempts, batches, retries)')
      .option(
        '--max-in-flight <n|off|default>',
        "attempts in flight at once; off: none; default: the workers' (REDELIVER_ENDPOINT_MAX_IN_FLIGHT)",
      )
      .option(
        '--rate <r/s|off|default>',
        "attempts per second: 200, 200/s, 12000/min; off: none; default: the workers' (REDELIVER_ENDPOINT_RATE)",
      )
      .option('--breaker <on|off|default>', 'the circuit breaker: while the endpoint is failing, one probe at a time (default off)')
      .option('--probe-every <duration|default>', 'while the breaker is open, at most one probe per this long (default 1s)')
      .option('--auto-disable-after <duration|off|default>', 'disable the endpoint once it has been failing this long (default off)')
      .option(
        '--priority <deadline-first|fifo|default>',
        'who goes first when slots are scarce: command responses, then events, then telemetry (deadline-first, the default), or fifo',
      )
      .option(
        '--outage <hold|off|default>',
        "while the endpoint fails, a batch's messages wait in an outage hold, released at the recovery pace (hold), or each becomes a delivery of its own (off); default: the workers' (REDELIVER_OUTAGE_HOLD, on)",
      )
      .option('--json', 'print JSON'),
  )
    .addHelpText(
      'after',
      '\nExample:\n  $ redeliver endpoint set ingest.example.com --max-in-flight 50 --rate 200/s\n  $ redeliver endpoint set ingest.example.com --rate default --probe-every 5s',
    )
    .action(async (name: string, flags: SetFlags) => {
      const change = settingsFromFlags(flags);
      await showAfter(name, flags, (handle) => handle.set(change));
    });
  withConnectionFlags(
    endpoint
      .command('show <endpoint>')
      .description("an endpoint's own limits, as every worker applies them")
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver endpoint show ingest.example.com --json')
    .action(async (name: string, flags: ConnectionFlags & { json?: boolean }) => {
      await showAfter(name, flags, (handle) => handle.control(), true);
    });
  for (const mode of MODES) registerMode(endpoint, mode);
}

/** The mode commands: each is one update to the endpoint's workflow, read by every worker (no update per delivery). */
const MODES = [
  { name: 'pause', reason: true, what: 'hold every attempt to the endpoint, none sent, until resumed (max ages run on)' },
  { name: 'resume', reason: false, what: 'let attempts go again after a pause or a disable (held deliveries come back within 30 s)' },
  { name: 'disable', reason: true, what: 'end every attempt to the endpoint as a dead letter (rejected) saying so; redrive once resumed' },
] as const;

function registerMode(group: Command, mode: (typeof MODES)[number]): void {
  const command = group.command(`${mode.name} <endpoint>`).description(mode.what).option('--json', 'print JSON');
  if (mode.reason) command.option('--reason <text>', 'why, shown in the reason of every delivery it holds or ends');
  withConnectionFlags(command)
    .addHelpText(
      'after',
      `\nExample:\n  $ redeliver endpoint ${mode.name} ingest.example.com${mode.reason ? ' --reason "maintenance"' : ''}`,
    )
    .action(async (name: string, flags: ConnectionFlags & { json?: boolean; reason?: string }) => {
      await showAfter(name, flags, (handle) => (mode.name === 'resume' ? handle.resume() : handle[mode.name](flags.reason)));
    });
}

/** Does `act` to the endpoint and prints its control as the workers now read it; with `withPace`, its recovery pace too. */
async function showAfter(
  name: string,
  flags: ConnectionFlags & { json?: boolean },
  act: (handle: EndpointHandle) => Promise<EndpointControl>,
  withPace = false,
): Promise<void> {
  const redeliver = await connect(flags);
  try {
    const handle = redeliver.endpoint(name);
    const control = await act(handle);
    const pace = withPace ? await handle.pace() : null;
    emit(!!flags.json, { endpoint: handle.endpoint, ...control, ...(pace && { pace }) }, () => [
      ...describe(handle.endpoint, control),
      ...(pace ? [`  ${paceInWords(pace)}`] : []),
    ]);
  } finally {
    await redeliver.close();
  }
}

const FLAGS = {
  maxInFlight: '--max-in-flight',
  rate: '--rate',
  breaker: '--breaker',
  probeEvery: '--probe-every',
  autoDisableAfter: '--auto-disable-after',
  priority: '--priority',
  outage: '--outage',
} as const;

/** The flags as a settings change (`default`: back to the workers' default), checked here so that problems name the flags. */
function settingsFromFlags(flags: SetFlags): EndpointSettingsChange {
  const given = (value: string | undefined) =>
    value === 'default' ? null : value !== undefined && /^\d+$/.test(value) ? Number(value) : value;
  const input = Object.fromEntries(
    Object.entries({
      maxInFlight: given(flags.maxInFlight),
      rate: given(flags.rate),
      breaker: given(flags.breaker),
      probeEvery: given(flags.probeEvery),
      autoDisableAfter: given(flags.autoDisableAfter),
      priority: given(flags.priority),
      outage: given(flags.outage),
    }).filter(([, v]) => v !== undefined),
  );
  const { change, problems } = checkSettingsChange(input);
  const named: Problem[] = problems.map((p) => ({ field: FLAGS[p.field as keyof typeof FLAGS] ?? p.field, message: p.message }));
  if (Object.keys(input).length === 0)
    named.push({
      field: '--max-in-flight',
      message: 'or --rate, --breaker, --probe-every, --auto-disable-after, --priority, --outage: give at least one',
    });
  if (named.length) throw new InvalidInputError(named, 'flags');
  return change;
}

function describe(endpoint: string, control: EndpointControl): string[] {
  const { settings, breaker, mode } = control;
  const own = limitsOf(settings, NO_LIMITS);
  const limits = settings.maxInFlight !== undefined || settings.rate !== undefined ? limitsInWords(own) : "the workers' default";
  const probe = `one probe per ${formatDuration(settings.probeEvery ?? DEFAULT_PROBE_EVERY_MS)}`;
  const breakerWords = settings.breaker !== 'on' ? 'off' : breaker?.open ? `open (failing): ${probe}` : `closed (${probe} while failing)`;
  const modeWords = mode ? `${mode.state} since ${new Date(mode.since).toISOString()} (${mode.by}): ${mode.reason}` : 'active';
  const auto = typeof settings.autoDisableAfter === 'number' ? `after failing ${formatDuration(settings.autoDisableAfter)}` : 'off';
  const priority = settings.priority ?? `${DEFAULT_PRIORITY} (the default)`;
  const outage = settings.outage ?? "the workers' default (REDELIVER_OUTAGE_HOLD)";
  return [
    `${endpoint}`,
    `  mode:    ${modeWords}`,
    `  limits:  ${limits}`,
    `  priority: ${priority}`,
    `  breaker: ${breakerWords}`,
    `  auto-disable: ${auto}`,
    `  outage:  ${outage}`,
  ];
}
