import {
  CancelledFailure,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { retryProgressOf } from '../activities/progress';
import type { DeliveryMemo } from '../starter/delivery-start';
import { humanDuration, waitingSummary } from '../delivery/summary';
import type { DeliveryResult, DeliveryStatus } from '../delivery/types';
import { isEncryptedValue, type EncryptedValue } from '../encryption/codec';
import { DeliveryControlError, refusalKindOf } from '../errors';
import {
  Attempts,
  DeliveryKind,
  DeliveryState,
  Endpoint,
  LastErrorClass,
  pauseUpdate,
  resumeUpdate,
  retryNowUpdate,
  statusQuery,
  type DeliveryWorkflow,
  type RetryProgress,
} from '../contract';

/*
 * One delivery on the client's side: its status and result (read in the clear when this process has no keys),
 * and its controls (retry now, pause, resume, cancel).
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

  /** Where the delivery stands: state, attempts, next attempt time, last error, the attempt log. */
  async status(): Promise<DeliveryStatus> {
    const description = await this.workflow.describe();
    if (description.status.name === 'RUNNING') {
      const status = await this.workflow.query(statusQuery);
      if (isEncryptedValue(status)) return encryptedStatus(this.deliveryId, description, status);
      // while Temporal retries the delivery, its progress is in the retrying activity, not the workflow
      const progress =
        status.state === 'waiting' ? await retryProgressOf(this.workflow.client.options.loadedDataConverter, description) : null;
      return progress && progress.attempts >= status.attempts ? withProgress(status, progress) : status;
    }
    // a closed delivery: its result says it all (no worker needed)
    const result = await this.result();
    if (result.encrypted) return encryptedStatus(this.deliveryId, description, { $encrypted: result.encrypted });
    return {
      deliveryId: this.deliveryId,
      ...(description.memo as unknown as DeliveryMemo).delivery,
      state: result.outcome,
      attempts: result.attempts,
      firstAttemptAt: result.firstAttemptAt,
      lastAttemptAt: result.lastAttemptAt,
      nextAttemptAt: null,
      lastError: result.lastError,
      attemptLog: [],
      summary: `${result.outcome}: ${result.reason}`,
      pause: null,
    };
  }

  /** Waits for the outcome. A cancelled delivery resolves to outcome `cancelled`. */
  async result(): Promise<DeliveryResult> {
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
    return this.control(() => this.workflow.executeUpdate(retryNowUpdate));
  }

  /**
   * Pauses the delivery: no further attempt until `resume` (an attempt in flight finishes). Paused time
   * does not count towards its max age; its deadline, an absolute time, still applies.
   */
  async pause(reason = ''): Promise<DeliveryStatus> {
    return this.control(() => this.workflow.executeUpdate(pauseUpdate, { args: [reason] }));
  }

  /** Resumes a paused delivery: it attempts when its planned time has come, at once if that has passed. */
  async resume(): Promise<DeliveryStatus> {
    return this.control(() => this.workflow.executeUpdate(resumeUpdate));
  }

  /**
   * Cancels the delivery: no further attempt is made; the outcome is `cancelled`. Resolves once it has
   * ended (an attempt in flight finishes first), with its status: the attempts the endpoint saw.
   */
  async cancel(options: { waitMs?: number } = {}): Promise<DeliveryStatus> {
    await this.control(async () => {
      // Temporal accepts a cancel request for a closed workflow silently; say that it has ended instead
      if ((await this.workflow.describe()).status.name !== 'RUNNING') throw new Error('closed');
      await this.workflow.cancel();
      return undefined;
    });
    // it ends once an attempt in flight has finished; with no worker to take the request, it would never
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), options.waitMs ?? CANCEL_WAIT_MS)));
    const ended = await Promise.race([this.result().then(() => true as const), waited]).finally(() => clearTimeout(timer));
    if (ended) return this.status();
    const summary = 'cancel requested: the delivery ends when a worker takes the request up (an attempt in flight finishes first)';
    return visibleStatus(this.deliveryId, await this.workflow.describe(), summary);
  }

  /** Runs a control, turning "refused" and "already ended" into a DeliveryControlError that says why. */
  private async control<T>(fn: () => Promise<T>): Promise<T> {
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

/** `delivery/<tenant>/<device>/<messageId>`: what the id alone says (it is never encrypted). */
export function idParts(deliveryId: string): { tenant: string; device: string; messageId: string } {
  const [, tenant = '', device = '', ...rest] = deliveryId.split('/');
  return { tenant, device, messageId: rest.join('/') };
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
