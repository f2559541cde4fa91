import type { Command } from 'commander';
import type { EndpointView } from '../client/index';
import { humanDuration } from '../delivery/summary';
import { endpointTimelineFigure } from '../plot/endpoints';
import type { EndpointDowntimeReport } from '../endpoints/types';
import { InvalidInputError, type Problem } from '../errors';
import { plotFormat, renderFigure, writePlot } from '../plot';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { timeFlag } from './filter-flags';
import { emit } from './output';

export function registerEndpoints(program: Command): void {
  withConnectionFlags(
    program
      .command('endpoints')
      .description("endpoints' health: healthy, failing or recovering, failure rate, retries the budget held back, deliveries waiting")
      .option('--endpoint <host:port>', 'just this endpoint')
      .option('--json', 'print JSON (an array)'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver endpoints\n  $ redeliver endpoints --endpoint api.example.com --json')
    .action(async (flags: ConnectionFlags & { endpoint?: string; json?: boolean }) => {
      const redeliver = await connect(flags);
      try {
        const rows = await redeliver.endpoints(flags.endpoint);
        emit(!!flags.json, rows, () => formatEndpoints(rows));
      } finally {
        await redeliver.close();
      }
    });

  withConnectionFlags(
    program
      .command('downtime')
      .description(
        'downtime per endpoint as the retry guide defines it: spells over 1 min in which sending was not possible, reconnections (3 attempts within 3 min) excepted',
      )
      .option('--endpoint <host:port>', 'just this endpoint')
      .option('--since <time>', 'from this time: ISO date, or a duration ago such as 2h, 7d')
      .option(
        '--plot <file>',
        "also draw the endpoint's timeline (attempts per second, failures, downtime) to FILE.svg or FILE.png; needs --endpoint",
      )
      .option('--json', 'print JSON (an array)'),
  )
    .addHelpText(
      'after',
      '\nExample:\n  $ redeliver downtime --since 24h\n  $ redeliver downtime --endpoint api.example.com --plot downtime.svg',
    )
    .action(async (flags: ConnectionFlags & { endpoint?: string; since?: string; plot?: string; json?: boolean }) => {
      const problems: Problem[] = [];
      const since = timeFlag('--since', flags.since, problems);
      if (flags.plot !== undefined && !plotFormat(flags.plot))
        problems.push({ field: '--plot', message: `must name a .svg or .png file, got ${JSON.stringify(flags.plot)}` });
      if (flags.plot !== undefined && !flags.endpoint)
        problems.push({ field: '--plot', message: 'draws one endpoint: name it with --endpoint' });
      if (problems.length) throw new InvalidInputError(problems, 'flags');
      const redeliver = await connect(flags);
      try {
        const reports = await redeliver.downtime({ ...(flags.endpoint && { endpoint: flags.endpoint }), ...(since && { since }) });
        if (flags.endpoint && reports.length === 0) throw new Error(`no worker has reported attempts to ${flags.endpoint} yet`);
        if (flags.plot && flags.endpoint) {
          const timeline = await redeliver.endpointTimeline(flags.endpoint);
          const figure = endpointTimelineFigure({
            endpoint: flags.endpoint,
            timeline,
            report: reports[0]!.report,
            ...(since && { from: since.getTime() }),
          });
          await writePlot(flags.plot, renderFigure(figure));
        }
        emit(!!flags.json, reports, () =>
          reports.length
            ? reports.flatMap((r, i) => [...(i ? [''] : []), ...formatDowntime(r.endpoint, r.report)])
            : 'no endpoint has reported attempts yet',
        );
      } finally {
        await redeliver.close();
      }
    });
}

export function formatEndpoints(rows: EndpointView[]): string[] {
  if (rows.length === 0) return ['no endpoint has reported attempts yet'];
  const header = ['STATE', 'FAILED/MIN', 'ATTEMPTS/MIN', 'HELD BACK/MIN', 'WAITING', 'WORKERS', 'DOWNTIME', 'ENDPOINT'];
  const lines = rows.map((r) => [
    r.state,
    `${Math.round(r.failureRate * 100)}%`,
    String(r.attemptsLastMinute),
    String(r.heldBackLastMinute),
    String(r.waiting),
    String(r.workers),
    r.downtimeMs ? `${humanDuration(r.downtimeMs)} in ${r.downtimePeriods}` : '-',
    r.endpoint,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines].map((l) => l.map((c, i) => (i === l.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
}

export function formatDowntime(endpoint: string, r: EndpointDowntimeReport): string[] {
  const lines = [
    `${endpoint}: ${humanDuration(r.totalMs)} of downtime since ${r.since} in ${r.periods.length} period${r.periods.length === 1 ? '' : 's'}${r.complete ? '' : ' (older periods no longer kept)'}`,
    `  not counted: ${r.glitches} spell${r.glitches === 1 ? '' : 's'} of ${humanDuration(r.thresholdMs)} or less, ${r.reconnections} reconnection${r.reconnections === 1 ? '' : 's'} (${r.reconnectAttempts}+ attempts within ${humanDuration(r.reconnectWindowMs)})`,
    ...r.periods.map((p) => `  ${p.from} → ${p.to}  ${humanDuration(p.durationMs).padEnd(9)} ${p.attempts} attempts, ${p.reason}`),
  ];
  if (r.current) {
    lines.push(
      `  now: failing since ${r.current.since} (${humanDuration(r.current.durationMs)}, ${r.current.failures} failures, ${r.current.reason})${r.current.countsAsDowntime ? ', counted as downtime' : ''}`,
    );
  }
  return lines;
}
