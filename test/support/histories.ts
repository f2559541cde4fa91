import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import type { CarriedState, DeliveryWorkflowInput, RetryEnd, RetryInput, RetryProgress } from '../../src/contract';
import type { DeliveryHandle } from '../../src/client/index';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One run of a delivery, as its history tells it. */
export interface Run {
  runId: string;
  events: HistoryEvent[];
  /** What the run was started with: the delivery, and what the previous run carried over. */
  input: DeliveryWorkflowInput;
}

/**
 * Every run of a workflow, first to last, following the continue-as-new chain back from the latest
 * run (each run's start event names the run it continues). Needs no visibility store, so it also
 * works on the Java test server, which cannot list workflows.
 */
export async function runsOf(client: Client, workflowId: string): Promise<Run[]> {
  const runs: Run[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    if (!started) throw new Error(`run ${runId} of ${workflowId} has no start event`);
    runs.unshift({ runId, events, input: defaultPayloadConverter.fromPayload(started.input!.payloads![0]!) });
    runId = started.continuedExecutionRunId || undefined;
  }
  return runs;
}

export const eventTime = (e: HistoryEvent): number => tsToMs(e.eventTime!);

/** When the last run closed: its last event. */
export function closedAt(runs: Run[]): number {
  const last = runs[runs.length - 1]!.events;
  return eventTime(last[last.length - 1]!);
}

/** The name of a history event's type, from its attributes' field (`timerStarted`, `activityTaskScheduled`, …). */
export function eventType(e: HistoryEvent): string {
  const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k] != null);
  return key ? key.replace(/EventAttributes$/, '') : 'unknown';
}

/**
 * From a delivery's history, its `retryDelivery` activity (the first one it scheduled): the planned time of an
 * attempt and when the server started the execution that sent it (the final ActivityTaskStarted: Temporal
 * writes one for all of an activity's executions, with the last one's start time and attempt number). `first`:
 * attempt 2's plan, from the activity's input; `last`: the plan of the attempt it ended with, from its result.
 */
export async function retryTiming(
  client: Client,
  h: DeliveryHandle,
  plan: 'first' | 'last' = 'first',
): Promise<{ planned: number; started: number; runs: number }> {
  const events = (await h.workflow.fetchHistory()).events ?? [];
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'retryDelivery');
  if (!scheduled) throw new Error(`${h.deliveryId}: no retryDelivery activity`);
  const of = (attributes: { scheduledEventId?: unknown } | null | undefined) =>
    !!attributes && Number(attributes.scheduledEventId) === Number(scheduled.eventId);
  const startedEvent = [...events].reverse().find((e) => of(e.activityTaskStartedEventAttributes));
  if (!startedEvent) throw new Error(`${h.deliveryId}: retryDelivery never started`);
  const converter = client.options.loadedDataConverter;
  let progress: RetryProgress;
  if (plan === 'first') {
    const payloads = scheduled.activityTaskScheduledEventAttributes!.input?.payloads ?? [];
    progress = (await decodeFromPayloadsAtIndex<RetryInput>(converter, 0, payloads)).progress;
  } else {
    const completed = events.find((e) => of(e.activityTaskCompletedEventAttributes));
    if (!completed) throw new Error(`${h.deliveryId}: retryDelivery did not complete`);
    progress = (
      await decodeFromPayloadsAtIndex<RetryEnd>(converter, 0, completed.activityTaskCompletedEventAttributes!.result?.payloads ?? [])
    ).progress;
  }
  return {
    planned: progress.nextAttemptAt,
    started: eventTime(startedEvent),
    runs: startedEvent.activityTaskStartedEventAttributes!.attempt ?? 0,
  };
}

export type { CarriedState };
