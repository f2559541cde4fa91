import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { forEachBounded } from '../concurrency/pool';
import type { DeliveryMemo } from '../starter/delivery-start';
import type { DeliveryStarter } from '../starter/delivery-starter';
import { DEAD_LETTER_STATES, type DeadLetterState, type DeliveryFilter } from '../delivery/filter';
import { DeliveryControlError } from '../errors';
import { DeliveryState, type DeliveryWorkflow } from '../contract';
import { DeliveryHandle } from './delivery-handle';
import type { DeliverySummary } from './lists';

/* Redrives of dead letters: one, or every one a filter matches. */

/** Which dead letters: a delivery filter whose state is a dead letter's (all of them by default). */
export type DeadLetterFilter = Omit<DeliveryFilter, 'state'> & { state?: DeadLetterState | DeadLetterState[] };

/** Redrives, by the starter every delivery starts by; `deadLetters` lists them. */
export class Redrives {
  constructor(
    private readonly client: Client,
    private readonly starter: DeliveryStarter,
    private readonly deadLetters: (filter: DeadLetterFilter) => AsyncIterable<DeliverySummary>,
  ) {}

  /** Redrive's semantics are on Redeliver.redrive; one dead letter's redrives share a request id (the starter's). */
  async redrive(deliveryId: string, options: { runId?: string } = {}): Promise<DeliveryHandle> {
    const handle = this.client.workflow.getHandle<DeliveryWorkflow>(deliveryId);
    const description = await handle.describe();
    if (description.status.name === 'RUNNING' || (options.runId !== undefined && description.runId !== options.runId)) {
      return new DeliveryHandle(handle, false);
    }
    const state = description.typedSearchAttributes.get(DeliveryState);
    if (!DEAD_LETTER_STATES.includes(state as DeadLetterState)) {
      const current = state ?? description.status.name.toLowerCase();
      throw new DeliveryControlError(deliveryId, 'NotADeadLetter', `only dead letters can be redriven; this delivery is ${current}`);
    }
    const { message } = await this.client.workflow.getHandle<DeliveryWorkflow>(deliveryId, description.runId).result();
    if (!message) throw new DeliveryControlError(deliveryId, 'NoMessage', 'the dead letter has no message to redrive');
    const now = Date.now();
    if (message.policy.deadline !== null && message.policy.deadline <= now) {
      const deadline = new Date(message.policy.deadline).toISOString();
      throw new DeliveryControlError(deliveryId, 'DeadlinePassed', `its deadline ${deadline} has passed`);
    }
    const redrive = { of: description.runId, token: randomUUID() };
    // an ordered dead letter that stopped its key takes its place back at the head; any other, one at the end
    const started = await this.starter.startInTurn({ ...message, submittedAt: now }, { reuse: 'ALLOW_DUPLICATE', redrive });
    // running again: redriven by someone else in the meantime
    if (!started.created) return new DeliveryHandle(started.workflow, false);
    // a start deduplicated by its request id gets the run an earlier one made: ours only if it has our token
    const run = await this.client.workflow.getHandle(deliveryId, started.workflow.firstExecutionRunId).describe();
    return new DeliveryHandle(started.workflow, (run.memo as Partial<DeliveryMemo> | undefined)?.redriveToken === redrive.token);
  }

  /** Every dead letter a filter matches, a few at a time: each delivery's latest run only; failures reported. */
  async redriveAll(
    filter: DeadLetterFilter = {},
    options: { concurrency?: number; onProgress?: (done: number, total: number) => void; signal?: AbortSignal } = {},
  ): Promise<RedriveReport> {
    // visibility lists every run that ended as a dead letter; only a delivery's latest one can still be redriven
    const latest = new Map<string, DeliverySummary>();
    for await (const letter of this.deadLetters(filter)) {
      const seen = latest.get(letter.deliveryId);
      if (!seen || seen.startedAt < letter.startedAt) latest.set(letter.deliveryId, letter);
    }
    const letters = [...latest.values()];
    const report: RedriveReport = { redriven: [], alreadyRedriven: [], failed: [] };
    let done = 0;
    await forEachBounded(
      letters,
      options.concurrency ?? 16,
      async ({ deliveryId, runId }) => {
        try {
          const handle = await this.redrive(deliveryId, { runId });
          (handle.created ? report.redriven : report.alreadyRedriven).push(deliveryId);
        } catch (err) {
          report.failed.push({ deliveryId, error: err instanceof Error ? err.message : String(err) });
        }
        options.onProgress?.(++done, letters.length);
      },
      // once aborted, the redrives in flight finish and no other starts
      { ...(options.signal && { signal: options.signal }) },
    );
    return report;
  }
}

/** What a bulk redrive did with each dead letter it found. */
export interface RedriveReport {
  /** Started again by this call. */
  redriven: string[];
  /** Running again, or redriven by someone else (beside this call or before it). */
  alreadyRedriven: string[];
  failed: { deliveryId: string; error: string }[];
}
