import { firstAttemptsSource, type BatchWorkflowInput, type FirstAttempt, type HeldMessage, type MessageResult } from '../contract';
import { afterFailure, logAttempt, sentOnce, verdictOf } from '../delivery/after-failure';
import { attemptError } from '../delivery/attempt-error';
import type { Delivery } from '../delivery/types';
import type { HoldIntake } from '../starter/hold-intake';
import type { RecoveryPacer } from '../worker-services/pacer';
import { activityClock } from './deliver';

/*
 * A batch's messages in an outage (docs/endpoint-health.md, "Outages"): while their endpoint is failing, those the
 * batch comes to are not sent, and those whose first attempt failed because of it (a retryable failure while its
 * attempts fail alike) do not become deliveries of their own: they wait together in the endpoint's outage hold,
 * handed in with one update per endpoint once the batch's sends are done. A message that fails on its own while its
 * endpoint is healthy (a 4xx, a lone error), telemetry at QoS 0 and an ordered message keep the batch's usual path.
 */

interface Waiting {
  index: number;
  message: HeldMessage;
}

export class Outages {
  /** The messages to hand in, by endpoint. */
  private readonly waiting = new Map<string, Waiting[]>();
  /** Failed first attempts whose endpoint was not failing alike when they failed: decided once the sends are done. */
  private readonly lone: { index: number; first: FirstAttempt }[] = [];
  private readonly batch: string;

  constructor(
    private readonly pacer: RecoveryPacer,
    private readonly intake: HoldIntake | null,
    private readonly input: BatchWorkflowInput,
    private readonly applies: (endpoint: string) => Promise<boolean> = () => Promise.resolve(true),
    private readonly now: () => number = activityClock(),
  ) {
    this.batch = firstAttemptsSource(input);
  }

  /** Whether the endpoint is failing now: only then may a send's messages wait unsent (holdsUnsent). */
  failing(endpoint: string): boolean {
    return this.pacer.state(endpoint) === 'failing';
  }

  /** Before a send: true when the endpoint is failing, and its messages (none sent at most once) wait unsent. */
  async holdsUnsent(indexes: readonly number[]): Promise<boolean> {
    const deliveries = indexes.map((i) => this.input.deliveries[i]!);
    const { endpoint } = deliveries[0]!;
    if (!this.failing(endpoint) || deliveries.some(sentOnce) || !(await this.holdsFor(endpoint))) return false;
    const at = this.now();
    for (const i of indexes) this.add(i, this.unsent(this.input.deliveries[i]!, at));
    return true;
  }

  /**
   * After a failed first attempt that the policy retries: true when it waits in the hold (its endpoint failing alike),
   * or for the end of the batch's sends (a lone failure so far): the first failure of an outage looks lone when it
   * comes, and the batch's other sends to the endpoint tell by their end (settle).
   */
  async holdsAfter(index: number, first: FirstAttempt): Promise<boolean> {
    const delivery = this.input.deliveries[index]!;
    if (!(await this.holdsFor(delivery.endpoint))) return false;
    const state = { attempts: 1, previousDelay: null, agedFrom: first.startedAt, at: first.endedAt };
    if (afterFailure(delivery, first.failure, state, Math.random).end) return false;
    if (this.pacer.holds(delivery.endpoint)) this.add(index, this.afterFirst(delivery, first));
    else this.lone.push({ index, first });
    return true;
  }

  /** Once the batch's sends are done: the lone failures whose endpoint fails alike by now wait in the hold; the others, returned, are the messages' own. */
  settle(): { index: number; first: FirstAttempt }[] {
    return this.lone.splice(0).filter(({ index, first }) => {
      const delivery = this.input.deliveries[index]!;
      if (!this.pacer.holds(delivery.endpoint)) return true;
      this.add(index, this.afterFirst(delivery, first));
      return false;
    });
  }

  /** Hands every waiting message to its endpoint's hold, and records each as held there. */
  async handIn(done: Record<number, MessageResult>): Promise<void> {
    for (const [endpoint, entries] of this.waiting) {
      const { holdId } = await this.intake!.hold(
        this.input.tenant,
        endpoint,
        entries.map((e) => e.message),
      );
      for (const { index, message } of entries) {
        const { delivery } = message;
        const code = message.attemptLog.at(-1)?.code ?? 'held';
        const at = new Date(message.lastAttemptAt ?? message.heldAt).toISOString();
        done[index] = { messageId: delivery.messageId, deliveryId: delivery.deliveryId, disposition: 'held', code, at, hold: holdId };
      }
    }
    this.waiting.clear();
  }

  private async holdsFor(endpoint: string): Promise<boolean> {
    return this.intake !== null && (await this.applies(endpoint));
  }

  private add(index: number, message: HeldMessage): void {
    const { endpoint } = message.delivery;
    if (!this.waiting.has(endpoint)) this.waiting.set(endpoint, []);
    this.waiting.get(endpoint)!.push({ index, message });
  }

  private unsent(delivery: Delivery, at: number): HeldMessage {
    return {
      delivery,
      batch: this.batch,
      heldAt: at,
      attempts: 0,
      firstAttemptAt: at,
      lastAttemptAt: null,
      lastError: null,
      attemptLog: [],
    };
  }

  private afterFirst(delivery: Delivery, first: FirstAttempt): HeldMessage {
    const { startedAt, endedAt, failure } = first;
    return {
      delivery,
      batch: this.batch,
      heldAt: endedAt,
      attempts: 1,
      firstAttemptAt: startedAt,
      lastAttemptAt: endedAt,
      lastError: attemptError(failure, 1, endedAt),
      attemptLog: logAttempt([], {
        attempt: 1,
        startedAt,
        durationMs: failure.durationMs,
        code: failure.code,
        ok: false,
        ...verdictOf(failure),
      }),
    };
  }
}
