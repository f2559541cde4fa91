import {
  ActivityNotFoundError,
  CancelledFailure,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { retryProgressOf } from '../activities/progress';
import type { DeliveryMemo } from '../starter/delivery-start';
import { idParts } from '../delivery/ids';
import { humanDuration, waitingSummary } from '../delivery/summary';
import type { DeliveryResult, DeliveryStatus } from '../delivery/types';
import { isEncryptedValue, type EncryptedValue } from '../encryption/codec';
import { DeliveryControlError, refusalKindOf, type RefusalKind } from '../errors';
import {
  Attempts,
  batchNamed,
  DeliveryKind,
  isBatchSource,
  DeliveryState,
  Endpoint,
  LastErrorClass,
  pauseUpdate,
  resumeUpdate,
  retryNowUpdate,
  statusQuery,
  type DeliveryWorkflow,
  type RetryProgress,
  type TakeOut,
} from '../contract';
import { batchedResult, batchedStatus, findBatched, type FoundBatched } from './batched';
import { activityClientOf, findFirstAttempt } from './first-attempts';
import { runsStandaloneActivities } from '../starter/first-attempt';
import { findHeld, heldIn, heldStatus, onceVisible, takeOut, type FoundHeld } from './holds';

/*
 * One delivery on the client's side: its status and result (read in the clear when this process has no keys),
 * and its controls (retry now, pause, resume, cancel). A message of a batch that waits in an outage hold has no
 * workflow of its own: the handle finds it in its hold (docs/endpoint-health.md, "Outages").
 */

/**
 * How long `cancel()` waits for the delivery to end: an attempt in flight finishes first (10 s by default,
 * at most 5 min); past this it answers with what visibility says, and the cancel goes on.
 */
export const CANCEL_WAIT_MS = 60_000;

export class DeliveryHandle {
  constructor(
    readonly workflow: WorkflowHandle<DeliveryWorkflow>,
    /** Whether this submit started the delivery (false: it already existed). */
    readonly created: boolean,
  ) {}

  get deliveryId(): string {
    return this.workflow.workflowId;
  }

  /**
   * Where the delivery stands: state, attempts, next attempt time, last error, the attempt log. A message
   * waiting in an outage hold is `waiting` there (`hold` names it), with the attempts it made.
   */
  async status(): Promise<DeliveryStatus> {
    try {
      return await this.ownStatus();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      const { batched, held } = await this.locate();
      const batch = batched?.batch ? { batch: batched.batch } : {};
      if (held && held.view.left?.left !== 'handed-over') return { ...heldStatus(held), ...batch };
      if (!held && !batched) throw err;
      const inBatch = !held && batched && batchedStatus(batched);
      if (inBatch) return inBatch;
      // handed over (from its batch or its hold) to a delivery of its own, just started
      return { ...(await onceVisible(() => this.ownStatus())), ...batch };
    }
  }

  /**
   * Where a message without a delivery of its own is (docs/batches.md, "Finding a message by its id"): in its batch,
   * found by the batch's message index, and in the hold its batch's row names (running or completed); else, for a
   * batch gone or from before the index, among the running holds of its tenant.
   */
  private async locate(): Promise<{ batched: FoundBatched | null; held: FoundHeld | null }> {
    const client = this.workflow.client;
    const batched = await this.firstAttemptOf();
    const hold = batched?.row?.disposition === 'held' ? batched.row.hold : undefined;
    const held = hold ? await heldIn(client, hold, this.deliveryId) : batched ? null : await findHeld(client, this.deliveryId);
    return { batched, held };
  }

  /** What made the message's first attempt without a delivery of its own: a single submit's standalone activity, or its batch. */
  private async firstAttemptOf(): Promise<FoundBatched | null> {
    const client = this.workflow.client;
    const first = (await runsStandaloneActivities(client)) ? await findFirstAttempt(activityClientOf(client), this.deliveryId) : null;
    return first ?? (await findBatched(client, this.deliveryId));
  }

  /** The status of the delivery's own workflow. */
  private async ownStatus(): Promise<DeliveryStatus> {
    const description = await this.workflow.describe();
    if (description.status.name === 'RUNNING') {
      const status = await this.workflow.query(statusQuery);
      if (isEncryptedValue(status)) return encryptedStatus(this.deliveryId, description, status);
      // while Temporal retries the delivery, its progress is in the retrying activity, not the workflow
      const progress =
        status.state === 'waiting' ? await retryProgressOf(this.workflow.client.options.loadedDataConverter, description) : null;
      const batch = batchOf(description.memo as unknown as DeliveryMemo);
      return { ...(progress && progress.attempts >= status.attempts ? withProgress(status, progress) : status), ...batch };
    }
    // a closed delivery: its result says it all (no worker needed)
    const result = await this.ownResult();
    if (result.encrypted) return encryptedStatus(this.deliveryId, description, { $encrypted: result.encrypted });
    const memo = description.memo as unknown as DeliveryMemo;
    return {
      deliveryId: this.deliveryId,
      ...memo.delivery,
      ...batchOf(memo),
      state: result.outcome,
      attempts: result.attempts,
      firstAttemptAt: result.firstAttemptAt,
      lastAttemptAt: result.lastAttemptAt,
      nextAttemptAt: null,
      lastError: result.lastError,
      attemptLog: result.attemptLog ?? [],
      summary: `${result.outcome}: ${result.reason}`,
      ...(result.policy && { policy: result.policy }),
      pause: null,
    };
  }

  /**
   * Waits for the outcome. A cancelled delivery resolves to outcome `cancelled`. A message of a batch without a
   * delivery of its own: its outcome in its batch or its hold (docs/batches.md, "Finding a message by its id").
   */
  async result(): Promise<DeliveryResult> {
    try {
      return await this.ownResult();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      const batched = await this.firstAttemptOf();
      if (!batched) throw err;
      return batchedResult(this.workflow.client, batched, () => onceVisible(() => this.ownResult()));
    }
  }

  /** The outcome of the delivery's own workflow. */
  private async ownResult(): Promise<DeliveryResult> {
    try {
      const result = await this.workflow.result();
      return isEncryptedValue(result) ? encryptedResult(this.deliveryId, await this.workflow.describe(), result) : result;
    } catch (err) {
      if (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure) {
        const description = await this.workflow.describe();
        return {
          deliveryId: this.deliveryId,
          messageId: idParts(this.deliveryId).messageId,
          outcome: 'cancelled',
          attempts: description.typedSearchAttributes.get(Attempts) ?? 0,
          firstAttemptAt: null,
          lastAttemptAt: null,
          lastError: null,
          reason: 'cancelled by request',
        };
      }
      throw err;
    }
  }

  /** Ends the current wait: the next attempt starts now. Refused unless the delivery is waiting. */
  async retryNow(): Promise<DeliveryStatus> {
    return this.control(() => this.workflow.executeUpdate(retryNowUpdate), {
      takeOut: { control: 'retryNow' },
      started: () => this.ownStatus(),
    });
  }

  /**
   * Pauses the delivery: no further attempt until `resume` (an attempt in flight finishes). Paused time
   * does not count towards its max age; its deadline, an absolute time, still applies.
   */
  async pause(reason = ''): Promise<DeliveryStatus> {
    return this.control(() => this.workflow.executeUpdate(pauseUpdate, { args: [reason] }), {
      takeOut: { control: 'pause', reason },
      started: () => this.ownStatus(),
    });
  }

  /** Resumes a paused delivery: it attempts when its planned time has come, at once if that has passed. */
  async resume(): Promise<DeliveryStatus> {
    // a held message is not paused: refused as a waiting delivery's resume is, and left in its hold
    return this.control(() => this.workflow.executeUpdate(resumeUpdate), { refuse: ['NotPaused', 'the delivery is not paused'] });
  }

  /**
   * Cancels the delivery: no further attempt is made; the outcome is `cancelled`. Resolves once it has
   * ended (an attempt in flight finishes first), with its status: the attempts the endpoint saw.
   */
  async cancel(options: { waitMs?: number } = {}): Promise<DeliveryStatus> {
    const cancel = async () => {
      // Temporal accepts a cancel request for a closed workflow silently; say that it has ended instead
      if ((await this.workflow.describe()).status.name !== 'RUNNING') throw new Error('closed');
      await this.workflow.cancel();
    };
    const waitMs = options.waitMs ?? CANCEL_WAIT_MS;
    const pending = 'cancel requested: the delivery ends when a worker takes the request up (an attempt in flight finishes first)';
    try {
      // taken out of a hold, its delivery waits a moment for this cancel
      await this.control(cancel, { takeOut: { control: 'cancel' }, started: () => this.refusing(cancel), waitMs });
    } catch (err) {
      if (err instanceof FirstAttemptUnderWay) return { ...(await this.status()), summary: pending };
      throw err;
    }
    // it ends once an attempt in flight has finished; with no worker to take the request, it would never
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), waitMs)));
    const ended = await Promise.race([this.result().then(() => true as const), waited]).finally(() => clearTimeout(timer));
    if (ended) return this.status();
    return visibleStatus(this.deliveryId, await this.workflow.describe(), pending);
  }

  /**
   * Runs a control. A message waiting in an outage hold is taken out of it, once, into a delivery of its own
   * that starts with the control applied and its attempts (`started` reads it); or the control is refused. One
   * that left its hold for a delivery of its own takes the control as any delivery.
   */
  private async control<T>(fn: () => Promise<T>, held: HeldControl<T>): Promise<T> {
    try {
      return await this.refusing(fn);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      const { batched, held: found } = await this.locate();
      if (!found) {
        if (batched?.cancelled) {
          if ('takeOut' in held && held.takeOut.control === 'cancel') return undefined as T; // cancel() reads the outcome
          throw new DeliveryControlError(this.deliveryId, 'Ended', `the delivery has ended (cancelled in ${batched.source})`);
        }
        if (batched && batched.batch === null && !batched.row) return this.afterFirstAttempt(batched, fn, held);
        if (batched?.row?.disposition === 'delivered')
          throw new DeliveryControlError(this.deliveryId, 'Ended', `the delivery has ended (delivered at once in ${batched.source})`);
        if (batched && !batched.row)
          throw new DeliveryControlError(this.deliveryId, 'NotWaiting', `${batched.source} is making its first attempt`);
        if (!batched) throw err;
        // handed over from its batch to a delivery of its own
        return onceVisible(() => this.refusing(fn));
      }
      if (found.view.left?.left === 'delivered')
        throw new DeliveryControlError(this.deliveryId, 'Ended', 'the delivery has ended (delivered)');
      if (!found.view.left) {
        if ('refuse' in held) throw new DeliveryControlError(this.deliveryId, ...held.refuse);
        if (await takeOut(this.workflow.client, found, held.takeOut)) return onceVisible(held.started);
      }
      return onceVisible(() => this.refusing(fn));
    }
  }

  /**
   * A control while a single submit's first attempt is under way (a standalone activity, which takes no update): a
   * cancel cancels it (the server ends one no worker has taken at once; one in flight learns at its next heartbeat,
   * its POST aborted, and may have arrived) and then applies to where the message went once the attempt is done,
   * within the cancel's wait; any other control is refused, as for a batch's message making its first attempt
   * (docs/batches.md, "A single submit").
   */
  private async afterFirstAttempt<T>(first: FoundBatched, fn: () => Promise<T>, held: HeldControl<T>): Promise<T> {
    if (!('takeOut' in held) || held.takeOut.control !== 'cancel')
      throw new DeliveryControlError(this.deliveryId, 'NotWaiting', `${first.source} is making its first attempt`);
    await activityClientOf(this.workflow.client)
      .getHandle(this.deliveryId)
      .cancel('cancelled by request')
      // it ended a moment ago: where the message went says what the cancel does
      .catch((err: unknown) => (err instanceof ActivityNotFoundError ? Promise.reject(err) : undefined));
    if ((await first.settled(held.waitMs ?? CANCEL_WAIT_MS)) === undefined) throw new FirstAttemptUnderWay();
    return this.control(fn, held);
  }

  /** Runs a control, turning "refused" and "already ended" into a DeliveryControlError that says why. */
  private async refusing<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        // the update's validator refused: its failure's type is the kind (DeliveryTracker)
        throw new DeliveryControlError(this.deliveryId, refusalKindOf(err.cause), err.cause?.message ?? err.message);
      }
      const description = await this.workflow.describe().catch(() => undefined);
      if (description && description.status.name !== 'RUNNING') {
        const state = description.typedSearchAttributes.get(DeliveryState) ?? description.status.name.toLowerCase();
        throw new DeliveryControlError(this.deliveryId, 'Ended', `the delivery has ended (${state})`);
      }
      throw err;
    }
  }
}

/** What a control does to a message waiting in an outage hold: takes it out with the control applied, or is refused. */
type HeldControl<T> = { takeOut: TakeOut; started: () => Promise<T>; waitMs?: number } | { refuse: [RefusalKind, string] };

/** A cancel whose first attempt is still under way when its wait is over: the cancel goes on. */
class FirstAttemptUnderWay extends Error {}

/** A waiting delivery's status, brought up to date with its retrying activity's progress. */
function withProgress(status: DeliveryStatus, p: RetryProgress): DeliveryStatus {
  const iso = (t: number) => new Date(t).toISOString();
  const delayMs = Math.max(0, p.nextAttemptAt - Date.now());
  const words = waitingSummary({ delayMs, code: p.lastError.code, nextAttempt: p.attempts + 1, expiresInMs: null, hinted: p.hinted });
  return {
    ...status,
    attempts: p.attempts,
    lastAttemptAt: iso(p.lastAttemptAt),
    nextAttemptAt: iso(p.nextAttemptAt),
    lastError: p.lastError,
    attemptLog: p.attemptLog,
    summary: p.reservedAt !== null ? `${words}; the endpoint's retry budget holds it back for ${humanDuration(delayMs)}` : words,
  };
}

/** What a process without the keys can tell of an encrypted delivery: its id, and its search attributes. */
function inTheClear(deliveryId: string, description: WorkflowExecutionDescription, { $encrypted }: EncryptedValue) {
  const sa = description.typedSearchAttributes;
  const id = idParts(deliveryId);
  const state = (sa.get(DeliveryState) ?? description.status.name.toLowerCase()) as DeliveryStatus['state'];
  const errorClass = sa.get(LastErrorClass);
  const words =
    `${state}${errorClass ? ` (last error class: ${errorClass})` : ''}; its message, target, times and errors are encrypted with key ` +
    `${$encrypted.keyId ?? '(none named)'}, and this process has no REDELIVER_ENCRYPTION_KEYS to read them`;
  return {
    ...id,
    state,
    attempts: sa.get(Attempts) ?? 0,
    kind: sa.get(DeliveryKind),
    endpoint: sa.get(Endpoint) ?? '',
    words,
    encrypted: $encrypted,
  };
}

/** A delivery's status from what visibility keeps in the clear: for when neither its workflow nor its payloads can answer. */
function visibleStatus(
  deliveryId: string,
  description: WorkflowExecutionDescription,
  summary: string,
  encrypted?: EncryptedValue,
): DeliveryStatus {
  const d = inTheClear(deliveryId, description, encrypted ?? { $encrypted: { keyId: null } });
  return {
    deliveryId,
    messageId: d.messageId,
    kind: d.kind as DeliveryStatus['kind'],
    qos: null,
    tenant: d.tenant,
    device: d.device,
    endpoint: d.endpoint,
    state: d.state,
    attempts: d.attempts,
    firstAttemptAt: null,
    lastAttemptAt: null,
    nextAttemptAt: null,
    lastError: null,
    attemptLog: [],
    summary,
    pause: null,
    ...(encrypted && { encrypted: d.encrypted }),
  };
}

/** The batch a delivery came in, as its memo names it (its workflow id, batch/<tenant>/<batch id>). */
function batchOf(memo: DeliveryMemo | undefined): Pick<DeliveryStatus, 'batch'> {
  const workflowId = memo?.batch;
  // a single submit's first attempt hands over as a batch of one, which is no batch to name
  return workflowId && isBatchSource(workflowId) ? { batch: batchNamed(workflowId) } : {};
}

function encryptedStatus(deliveryId: string, description: WorkflowExecutionDescription, value: EncryptedValue): DeliveryStatus {
  return visibleStatus(deliveryId, description, inTheClear(deliveryId, description, value).words, value);
}

function encryptedResult(deliveryId: string, description: WorkflowExecutionDescription, value: EncryptedValue): DeliveryResult {
  const d = inTheClear(deliveryId, description, value);
  return {
    deliveryId,
    messageId: d.messageId,
    outcome: d.state as DeliveryResult['outcome'],
    attempts: d.attempts,
    firstAttemptAt: null,
    lastAttemptAt: null,
    lastError: null,
    reason: d.words,
    encrypted: d.encrypted,
  };
}
