import { condition, setHandler } from '@temporalio/workflow';
import { TenantDeadLetters } from '../endpoints/tenant-events';
import { type TenantEventsInput, tenantDeadLettersSignal } from '../contract';
import { continueAsNewWhenIdle, DEFAULT_HISTORY_LIMIT, historyTooLong } from './history';
import { announce } from './operational-events';

/**
 * A tenant's dead letters told to the operator URLs (docs/endpoint-health.md, "Operational events"): workers
 * report them here (signal-with-start), and the run tells them in one `deliveries.dead-lettered` event per
 * window across the tenant's endpoints, by `announceEvents`. The event's id is decided here, in history order,
 * so its deliveries are started once whatever is retried. The run ends once nothing is due and no report is
 * recent enough to come again.
 */
export async function tenantEventsWorkflow(input: TenantEventsInput): Promise<void> {
  const dead = new TenantDeadLetters(input.tenant, input.carried);
  let reported = false;
  setHandler(tenantDeadLettersSignal, (report) => {
    dead.report(report, Date.now());
    reported = true;
  });
  for (;;) {
    const now = Date.now();
    const due = dead.take(now);
    if (due.length > 0) await announce(due);
    if (historyTooLong(input.historyLimit ?? DEFAULT_HISTORY_LIMIT))
      await continueAsNewWhenIdle<typeof tenantEventsWorkflow>({ ...input, carried: dead.carried() });
    const wakeAt = dead.wakeAt(Date.now());
    if (wakeAt === null) return;
    reported = false;
    await condition(() => reported, Math.max(1, wakeAt - Date.now()));
  }
}
