import { allHandlersFinished, condition, continueAsNew, workflowInfo, type Workflow } from '@temporalio/workflow';

/** Where a delivery or a subscription continues as new unless told otherwise (Temporal warns at 10,240 events). */
export const DEFAULT_HISTORY_LIMIT = 4_000;

/** Whether the run should continue as new: Temporal suggests it, or its history has reached `limit` events. */
export function historyTooLong(limit: number): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength >= limit;
}

/** Continues as new once no update or signal handler is still running: none is cut off, every update is answered. */
export async function continueAsNewWhenIdle<F extends Workflow>(...args: Parameters<F>): Promise<never> {
  await condition(allHandlersFinished);
  return await continueAsNew<F>(...args);
}
