import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import type { CarriedState, DeliveryWorkflowInput } from '../../src/workflows/delivery';

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

/** Every attempt across the runs, and the waits between them. */
export interface AttemptTimeline {
  /** When each attempt's activity was scheduled. */
  scheduledAt: number[];
  /**
   * The wait the workflow drew after each attempt but the last, in order. A wait that a continue-as-new
   * interrupted is the one drawn before it (the next run's timer only covers what was left of it).
   */
  waits: number[];
  /** When each of those waits was planned to end: the attempt after it is due then. */
  plannedAt: number[];
  /** When the last run closed. */
  closedAt: number;
}

export function timeline(runs: Run[]): AttemptTimeline {
  const scheduledAt: number[] = [];
  const waits: number[] = [];
  const plannedAt: number[] = [];
  for (const run of runs) {
    let attemptsInRun = 0;
    const carried = run.input.carried;
    if (carried?.nextAttemptAt != null && carried.previousDelay != null) {
      waits.push(carried.previousDelay);
      plannedAt.push(carried.nextAttemptAt);
    }
    for (const e of run.events) {
      if (e.activityTaskScheduledEventAttributes) {
        scheduledAt.push(eventTime(e));
        attemptsInRun++;
      }
      // the timer that finishes a carried wait was counted above, from the carried state
      if (e.timerStartedEventAttributes && (attemptsInRun > 0 || !carried)) {
        const wait = tsToMs(e.timerStartedEventAttributes.startToFireTimeout!);
        waits.push(wait);
        plannedAt.push(eventTime(e) + wait);
      }
    }
  }
  const last = runs[runs.length - 1]!.events;
  return { scheduledAt, waits, plannedAt, closedAt: eventTime(last[last.length - 1]!) };
}

/** The name of a history event's type, from its attributes' field (`timerStarted`, `activityTaskScheduled`, …). */
export function eventType(e: HistoryEvent): string {
  const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k] != null);
  return key ? key.replace(/EventAttributes$/, '') : 'unknown';
}

/**
 * The events from one attempt's activity to the next one's, in the middle of a run: what one failed
 * attempt costs in history.
 */
export function eventsPerAttemptCycle(run: Run): string[] {
  const scheduled = run.events.flatMap((e, i) => (e.activityTaskScheduledEventAttributes ? [i] : []));
  if (scheduled.length < 3) throw new Error('a run needs at least three attempts to show a whole cycle');
  const middle = Math.floor(scheduled.length / 2);
  return run.events.slice(scheduled[middle]!, scheduled[middle + 1]!).map(eventType);
}

export type { CarriedState };
