import type { Command } from 'commander';
import { InvalidInputError } from '../errors';
import type { DeliveryInput } from '../delivery/types';
import { validateDelivery } from '../validation/delivery';
import { secretTenantsFromEnvironment } from '../transports/secret-tenants';
import { connect, withConnectionFlags } from './connection';
import { emit } from './output';
import { refuseBatchFlags, submitFile, type FileFlags } from './submit-file';

interface SubmitFlags extends FileFlags {
  kind: string;
  qos?: string;
  target: string;
  id?: string;
  tenant: string;
  device: string;
  data?: string;
  contentType?: string;
  method?: string;
  header: string[];
  timeout?: string;
  topic?: string;
  protocolVersion?: string;
  credential?: string;
  orderingKey?: string;
  signing?: string;
  requestId?: string;
  status?: string;
  deadline?: string;
  jitter?: string;
  initial?: string;
  multiplier?: string;
  min?: string;
  max?: string;
  maxAttempts?: string;
  maxAge?: string;
  override: string[];
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerSubmit(program: Command): void {
  withConnectionFlags(
    program
      .command('submit')
      .description(
        'submit one delivery, or a file of them in batches; prints the ids (idempotent: the same --id, or the same file, starts nothing new)',
      )
      .option(
        '--file <path>',
        'bulk: a JSON array or NDJSON of deliveries (as in the client API; a missing messageId comes from the message, so the same file again sends nothing again); - for stdin',
      )
      .option('--no-batch', 'with --file: one workflow per message instead of batches')
      .option('--batch-id <id>', 'with --file: the batch id (default: a hash of the contents; several batches: <id>-1, <id>-2, …)')
      .option('--batch-size <n>', 'with --file: messages per batch, 1 to 1000 (default 500)')
      .option('--kind <kind>', 'telemetry | event | command-response')
      .option('--qos <0|1>', 'telemetry only (default 1)')
      .option('--target <url>', 'http(s) or mqtt(s) URL; {tenant} {device} {requestId} {status} are filled in')
      .option('--id <messageId>', 'stable message id (default: a new UUID)')
      .option('--tenant <tenant>', 'tenant id')
      .option('--device <device>', 'device id')
      .option('--data <text>', 'message body; JSON is sent as JSON (default: {})')
      .option('--content-type <type>', 'content type of the body')
      .option('--method <method>', 'POST | PUT | PATCH (default POST)')
      .option('--header <name:value>', 'extra HTTP header (repeatable)', collect, [])
      .option('--timeout <duration>', 'attempt timeout (default 10s)')
      .option(
        '--topic <topic>',
        "MQTT: the topic (default Hono's: telemetry/{tenant}/{device}, event/…, command///res/{requestId}/{status})",
      )
      .option('--protocol-version <5|3.1.1>', 'MQTT: the protocol version (default 5)')
      .option('--credential <name>', 'MQTT: the name of a credential the worker resolves (never the secret)')
      .option(
        '--signing <name>',
        'HTTP: sign every request (Standard Webhooks) with the signing secret of this name, which the worker resolves',
      )
      .option('--ordering-key <key>', 'deliver in submit order with the other deliveries of the tenant with this key (docs/ordering.md)')
      .option('--request-id <id>', 'command responses: the command request id')
      .option('--status <code>', 'command responses: the status to report (default 200)')
      .option('--deadline <time>', 'command responses: the command deadline (ISO time)')
      .option('--jitter <strategy>', 'full | equal | decorrelated | none (default full)')
      .option('--initial <duration>', 'first backoff window (default 200ms)')
      .option('--multiplier <n>', 'window growth per attempt (default 2)')
      .option('--min <duration>', 'least wait between attempts (default 200ms)')
      .option('--max <duration>', 'cap of the window (default 300s)')
      .option('--max-attempts <n>', 'attempts in all, 0 = unlimited (default 0)')
      .option('--max-age <duration>', 'expire after this long (default per kind)')
      .option('--override <code=class>', 'treat a code as another class or success, e.g. http-409=success (repeatable)', collect, [])
      .option('--wait', "wait for the outcome and print it (with --file: every message's, counted by outcome)")
      .option('--json', 'print JSON'),
  )
    .addHelpText(
      'after',
      `
Examples:
  $ redeliver submit --kind event --tenant acme --device sensor-1 --id msg-42 \\
      --target https://ingest.example.com/events --data '{"temp":21.5}' --json
  $ redeliver submit --file telemetry.ndjson                # in batches of up to 500
  $ redeliver submit --file telemetry.ndjson --wait --json  # and wait: counts by outcome, elapsedMs
  $ redeliver submit --file deliveries.ndjson --no-batch    # one workflow per message, with a progress bar`,
    )
    .action(async (flags: SubmitFlags) => {
      if (flags.file !== undefined) return submitFile(flags);
      refuseBatchFlags(flags);
      const input = inputFromFlags(flags);
      // bad input is refused (exit 2) before connecting to anything, another tenant's secret too where this shell has the worker's
      validateDelivery(input, { secretTenants: secretTenantsFromEnvironment() });
      const redeliver = await connect(flags);
      try {
        const handle = await redeliver.submit(input);
        if (flags.wait) {
          const result = await handle.result();
          emit(
            !!flags.json,
            { ...result, created: handle.created },
            () => `${handle.deliveryId}: ${result.outcome} after ${result.attempts} attempt(s) — ${result.reason}`,
          );
          if (result.outcome !== 'delivered') process.exitCode = 1;
        } else {
          emit(!!flags.json, { deliveryId: handle.deliveryId, created: handle.created }, () =>
            handle.created ? `submitted ${handle.deliveryId}` : `already submitted: ${handle.deliveryId}`,
          );
        }
      } finally {
        await redeliver.close();
      }
    });
}

/** Flags → DeliveryInput. Values stay as typed so validation can name what was wrong. */
export function inputFromFlags(flags: SubmitFlags): DeliveryInput {
  const problems: { field: string; message: string }[] = [];
  const num = (flag: string, value: string | undefined): number | undefined => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n))
      problems.push({ field: flag, message: `must be a number, got ${JSON.stringify(value)}` });
    return n;
  };
  const headers: Record<string, string> = {};
  for (const h of flags.header) {
    const i = h.indexOf(':');
    if (i <= 0) problems.push({ field: '--header', message: `must be name:value, got ${JSON.stringify(h)}` });
    else headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  const overrides: Record<string, string> = {};
  for (const o of flags.override) {
    const [code, verdict] = o.split('=');
    if (!code || !verdict) problems.push({ field: '--override', message: `must be code=class, got ${JSON.stringify(o)}` });
    else overrides[code] = verdict;
  }
  let payload: unknown = {};
  if (flags.data !== undefined) {
    try {
      payload = JSON.parse(flags.data);
    } catch {
      payload = flags.data;
    }
  }
  const qos = num('--qos', flags.qos);
  const policy = Object.fromEntries(
    Object.entries({
      jitter: flags.jitter,
      initial: flags.initial,
      multiplier: num('--multiplier', flags.multiplier),
      min: flags.min,
      max: flags.max,
      maxAttempts: num('--max-attempts', flags.maxAttempts),
      maxAge: flags.maxAge,
    }).filter(([, v]) => v !== undefined),
  );
  // a command's response flags on another kind would be refused as "command", which the user never typed
  if (flags.kind === 'telemetry' || flags.kind === 'event') {
    const given = { '--request-id': flags.requestId, '--status': flags.status, '--deadline': flags.deadline };
    for (const [flag, value] of Object.entries(given)) {
      if (value !== undefined)
        problems.push({ field: flag, message: `is for command responses (--kind command-response), not ${flags.kind}` });
    }
  }
  const command =
    flags.requestId !== undefined || flags.status !== undefined || flags.deadline !== undefined
      ? {
          requestId: flags.requestId as string,
          ...(flags.status !== undefined && { status: num('--status', flags.status) }),
          ...(flags.deadline !== undefined && { deadline: flags.deadline }),
        }
      : undefined;
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  const mqtt = {
    ...(flags.topic && { topic: flags.topic }),
    ...(flags.protocolVersion && { protocolVersion: flags.protocolVersion }),
    ...(flags.credential && { credential: flags.credential }),
  };
  const target =
    flags.method || flags.timeout || flags.header.length || flags.signing || Object.keys(mqtt).length
      ? {
          url: flags.target,
          ...(flags.method && { method: flags.method }),
          ...(flags.signing && { signing: flags.signing }),
          ...(flags.timeout && { timeout: flags.timeout }),
          ...(flags.header.length && { headers }),
          ...mqtt,
        }
      : flags.target;
  return {
    kind: flags.kind,
    ...(qos !== undefined && { qos }),
    tenant: flags.tenant,
    device: flags.device,
    target,
    payload,
    ...(flags.id && { messageId: flags.id }),
    ...(flags.contentType && { contentType: flags.contentType }),
    ...(flags.orderingKey !== undefined && { orderingKey: flags.orderingKey }),
    ...(command && { command }),
    ...(Object.keys(policy).length && { policy }),
    ...(Object.keys(overrides).length && { overrides }),
  } as DeliveryInput;
}
