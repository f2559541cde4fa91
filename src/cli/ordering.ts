import type { Command } from 'commander';
import { InvalidInputError, type Problem } from '../errors';
import type { OrderingStatus } from '../contract';
import { idSchema } from '../validation/limits';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import type { FilterFlags } from './filter-flags';
import { emit } from './output';

/*
 * Ordering keys from the shell (docs/ordering.md): `list --ordering-key` shows a key's queue (the `list` command
 * calls listKeyQueue), `release` lets a key stopped by a dead letter go on.
 */

export interface KeyFlags extends ConnectionFlags {
  tenant?: string;
  orderingKey?: string;
  json?: boolean;
}

/** `redeliver release --tenant T --ordering-key K`: the key goes on past the dead letter that stopped it. */
export function registerRelease(program: Command): void {
  withConnectionFlags(
    program
      .command('release')
      .description(
        'let an ordering key stopped by a dead letter go on: the next delivery goes, the dead letter stays one (refused unless stopped)',
      )
      .option('--tenant <tenant>', 'the key’s tenant')
      .option('--ordering-key <key>', 'the ordering key')
      .option('--json', 'print JSON: the key’s status after the release'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver release --tenant acme --ordering-key valve-7')
    .action(async (flags: KeyFlags) => {
      const { tenant, key } = keyOf(flags);
      const redeliver = await connect(flags);
      try {
        const status = await redeliver.ordering.release(tenant, key);
        emit(!!flags.json, status, () => formatKeyQueue(status));
      } finally {
        await redeliver.close();
      }
    });
}

/** `redeliver list --ordering-key K --tenant T`: the key's queue from its sequencer, in order (other filters do not apply). */
export async function listKeyQueue(flags: KeyFlags & FilterFlags, limit: number): Promise<void> {
  const filters = ['state', 'kind', 'device', 'endpoint', 'errorClass', 'since', 'until'] as const;
  const flag = (name: string) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  const message = 'does not apply with --ordering-key, which lists the key’s queue in order';
  const others = filters.filter((f) => flags[f] !== undefined).map((f) => ({ field: flag(f), message }));
  const { tenant, key } = keyOf(flags, others);
  const redeliver = await connect(flags);
  try {
    const status = await redeliver.ordering.status(tenant, key, limit);
    emit(!!flags.json, status, () => formatKeyQueue(status));
  } finally {
    await redeliver.close();
  }
}

/** Both flags, checked as submit checks them: bad ones are refused naming the flag (with `problems` found before), before connecting. */
function keyOf(flags: KeyFlags, problems: Problem[] = []): { tenant: string; key: string } {
  const check = (flag: string, value: string | undefined, what: string) => {
    const parsed = idSchema(what).safeParse(value);
    if (!parsed.success) problems.push({ field: flag, message: value === undefined ? 'is required' : parsed.error.issues[0]!.message });
  };
  check('--tenant', flags.tenant, 'tenant');
  check('--ordering-key', flags.orderingKey, 'ordering key');
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  return { tenant: flags.tenant!, key: flags.orderingKey! };
}

/** The key in a line, then its places in order: the dead letter that stopped it, the head (0), the queue (1, 2, …). */
export function formatKeyQueue(s: OrderingStatus): string[] {
  const rows: [string, string, string][] = [];
  if (s.blocked) rows.push(['-', `${s.blocked.outcome} (stops the key)`, s.blocked.deliveryId]);
  if (s.head) rows.push(['0', s.head.admitted ? 'delivering' : 'starting', s.head.deliveryId]);
  s.queue.forEach((q, i) => rows.push([String(i + 1), q.started ? 'queued' : 'starting', q.deliveryId]));
  const w0 = Math.max(1, ...rows.map((r) => r[0].length));
  const w1 = Math.max(5, ...rows.map((r) => r[1].length));
  const line = (r: readonly string[]) => `${r[0]!.padEnd(w0)}  ${r[1]!.padEnd(w1)}  ${r[2]}`;
  const more = s.queued > s.queue.length ? [`… and ${s.queued - s.queue.length} more queued`] : [];
  const table = rows.length ? [line(['#', 'STATE', 'DELIVERY']), ...rows.map(line)] : [];
  return [`ordering key ${s.tenant}/${s.key}: ${s.summary}`, ...table, ...more];
}
