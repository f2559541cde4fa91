import { type Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  Endpoint,
  HOLD_FULL,
  HOLD_MAX_BYTES,
  HOLD_MAX_MESSAGES,
  type HeldMessage,
  type HoldAnswer,
  type HoldWorkflow,
  holdUpdate,
  holdWorkflowId,
  Tenant,
} from '../contract';
import { fairnessKeyOf } from './delivery-start';

/*
 * How messages join an outage hold (docs/endpoint-health.md, "Outages"): one update-with-start per hand-in and
 * endpoint, to the hold's open generation. A hold full or sealed refuses (HOLD_FULL): the next generation is tried,
 * and remembered for the next hand-in. A worker that starts knows no generation: it walks up from 0, one refusal per
 * full hold.
 *
 * In an outage every batch the worker runs hands its messages to the same hold at once, and Temporal lets a workflow
 * have only a few updates in flight (10 by default, Temporal Cloud's too; more are refused as resource exhausted, and
 * a hold's updates can be aborted when its workflow task is lost under load): the batch's activity would fail and
 * send its messages again after a backoff. So a worker has at most one update in flight per hold, and the batches
 * that come meanwhile go together in the next one (a group commit), bounded so that a group always fits a fresh hold.
 * The first hand-in lingers a moment for others too: each update costs the hold five history events, and a batch
 * in an outage loses nothing by waiting that long.
 */

/** Generations tried for one hand-in before giving up (a hold takes 5,000 messages: 5 million waiting, per tenant and endpoint). */
const MAX_GENERATIONS = 1_000;
/** A hand-in of several batches takes at most a quarter of a hold: it fits a fresh one, and a refusal wastes little room. */
const GROUP_MAX_MESSAGES = HOLD_MAX_MESSAGES / 4;
const GROUP_MAX_BYTES = HOLD_MAX_BYTES / 4;
/** How long a hand-in waits for other batches' when none is in flight. */
export const HAND_IN_LINGER_MS = 200;

/** One batch's messages waiting for their hand-in, and the batch that waits for it. */
interface Waiting {
  messages: HeldMessage[];
  bytes: number;
  resolve(answer: { holdId: string }): void;
  reject(err: unknown): void;
}

export class HoldIntake {
  /** The open generation per tenant and endpoint, as this worker last found it. */
  private readonly generations = new Map<string, number>();
  /** The hand-ins waiting per tenant and endpoint while one is in flight (a key is present while one is). */
  private readonly queues = new Map<string, Waiting[]>();

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly lingerMs = HAND_IN_LINGER_MS,
  ) {}

  /** Hands the messages (one tenant's, to one endpoint) to the hold; answers with its workflow id once they are held. */
  hold(tenant: string, endpoint: string, messages: HeldMessage[]): Promise<{ holdId: string }> {
    const key = `${tenant}\n${endpoint}`;
    return new Promise((resolve, reject) => {
      const bytes = messages.reduce((n, m) => n + JSON.stringify(m).length, 0);
      const queue = this.queues.get(key);
      if (queue) return void queue.push({ messages, bytes, resolve, reject });
      this.queues.set(key, [{ messages, bytes, resolve, reject }]);
      setTimeout(() => void this.drain(key, tenant, endpoint), this.lingerMs);
    });
  }

  /** Hands in what waits for one hold, a group at a time, until nothing does. */
  private async drain(key: string, tenant: string, endpoint: string): Promise<void> {
    const queue = this.queues.get(key)!;
    while (queue.length > 0) {
      const group = nextGroup(queue);
      try {
        const answer = await this.handIn(
          key,
          tenant,
          endpoint,
          group.flatMap((w) => w.messages),
        );
        for (const w of group) w.resolve(answer);
      } catch (err) {
        for (const w of group) w.reject(err);
      }
    }
    this.queues.delete(key);
  }

  private async handIn(key: string, tenant: string, endpoint: string, messages: HeldMessage[]): Promise<{ holdId: string } & HoldAnswer> {
    for (let generation = this.generations.get(key) ?? 0, tries = 0; tries < MAX_GENERATIONS; generation++, tries++) {
      const holdId = holdWorkflowId(tenant, endpoint, generation, this.taskQueue);
      try {
        const answer = await this.client.workflow.executeUpdateWithStart(holdUpdate, {
          args: [messages],
          startWorkflowOperation: this.startOf(holdId, tenant, endpoint, generation),
        });
        this.generations.set(key, generation);
        return { holdId, ...answer };
      } catch (err) {
        if (!isFull(err)) throw err;
      }
    }
    throw new Error(`no outage hold for ${tenant} and ${endpoint} took the messages within ${MAX_GENERATIONS} generations`);
  }

  private startOf(holdId: string, tenant: string, endpoint: string, generation: number) {
    return new WithStartWorkflowOperation<HoldWorkflow>('holdWorkflow', {
      workflowId: holdId,
      taskQueue: this.taskQueue,
      args: [{ tenant, endpoint, generation }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: `outage hold: messages of ${tenant} waiting for ${endpoint} (generation ${generation})`,
      typedSearchAttributes: [
        { key: Tenant, value: tenant },
        { key: Endpoint, value: endpoint },
      ],
      priority: { fairnessKey: fairnessKeyOf(tenant) },
    });
  }
}

/** The first hand-ins waiting, as many as fit a group (at least one: a batch larger than a group goes alone, as it came). */
function nextGroup(queue: Waiting[]): Waiting[] {
  let messages = queue[0]!.messages.length;
  let bytes = queue[0]!.bytes;
  let n = 1;
  for (; n < queue.length; n++) {
    const next = queue[n]!;
    if (messages + next.messages.length > GROUP_MAX_MESSAGES || bytes + next.bytes > GROUP_MAX_BYTES) break;
    messages += next.messages.length;
    bytes += next.bytes;
  }
  return queue.splice(0, n);
}

function isFull(err: unknown): boolean {
  return err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === HOLD_FULL;
}
