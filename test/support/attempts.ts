import { performance } from 'node:perf_hooks';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { AttemptListener } from '../../src/activities/deliver';
import type { Delivery } from '../../src/delivery/types';

/** One attempt a worker sent, in the server's time as the test reads it. */
export interface SentAttempt {
  /** Its number: the `delivery-attempt` header. */
  attempt: number;
  startedAt: number;
  /** When its answer (or failure) was in. */
  endedAt: number;
  /** When it ended by the activity's own clock (activityClock): what the delivery decided with. */
  endedAtByActivity: number;
  ok: boolean;
  code: string;
}

/** Hears of every attempt a worker sends, and keeps them per delivery in the server's time. */
export interface AttemptRecorder {
  /** For createWorker's `attemptListener`. */
  listener: AttemptListener;
  /** An activity interceptor for the worker: each execution of an attempt-sending activity first reads the server's clock. */
  clock: ActivityInterceptorsFactory;
  /** The attempts of one delivery, in the order they were sent. */
  of(deliveryId: string): SentAttempt[];
}

/** The activities that send attempts, and where their delivery is in their arguments. */
const SENDERS: Record<string, (args: unknown[]) => string> = {
  sendAttempt: (args) => (args[0] as Delivery).deliveryId,
  retryDelivery: (args) => (args[0] as { delivery: Delivery }).delivery.deliveryId,
};

/**
 * The times come from the server, not from the activity: the activity's clock is part of what is tested
 * (the delivery decides its waits with it), so it cannot also be the evidence. Each execution reads the
 * server's time before it starts; the server does not skip time while an activity is outstanding, so an
 * attempt's end is that reading plus the real time since, and its start its end minus its duration.
 */
export function recordAttempts(serverTime: () => Promise<number>): AttemptRecorder {
  const byDelivery = new Map<string, SentAttempt[]>();
  const executing = new Map<string, { server: number; local: number }>();
  return {
    listener: {
      attempted(_endpoint, outcome, { deliveryId, attempt, startedAt }) {
        const base = executing.get(deliveryId);
        // an attempt outside a clocked execution has no server time: NaN fails every comparison
        const endedAt = base ? Math.round(base.server + (performance.now() - base.local)) : NaN;
        const sent = byDelivery.get(deliveryId) ?? [];
        sent.push({
          attempt,
          startedAt: endedAt - (outcome.at - startedAt),
          endedAt,
          endedAtByActivity: outcome.at,
          ok: outcome.ok,
          code: outcome.code,
        });
        byDelivery.set(deliveryId, sent);
      },
    },
    clock: (ctx) => ({
      inbound: {
        async execute(input, next) {
          const deliveryOf = SENDERS[ctx.info.activityType];
          if (!deliveryOf) return next(input);
          const deliveryId = deliveryOf(input.args);
          executing.set(deliveryId, { server: await serverTime(), local: performance.now() });
          try {
            return await next(input);
          } finally {
            executing.delete(deliveryId);
          }
        },
      },
    }),
    of: (deliveryId) => [...(byDelivery.get(deliveryId) ?? [])],
  };
}

/** A delivery's attempts and the waits between them, as they happened. */
export interface AttemptTimeline {
  /** When each attempt started. */
  startedAt: number[];
  /** When each attempt ended. */
  endedAt: number[];
  /**
   * The actual wait after each attempt but the last: from its end to the next one's start. The wait the
   * delivery planned is in no history any more (activities/retry.ts): this is it plus any lateness.
   */
  waits: number[];
  /**
   * How far behind the server's time each attempt's own clock was as it ended (activityClock): on a
   * time-skipping server an activity knows the time only from when it was scheduled, so an attempt that sat
   * in the task queue decides its next wait from an end this much earlier than the server's.
   */
  lags: number[];
}

export function timeline(attempts: SentAttempt[]): AttemptTimeline {
  const startedAt = attempts.map((a) => a.startedAt);
  const endedAt = attempts.map((a) => a.endedAt);
  const lags = attempts.map((a) => Math.max(0, a.endedAt - a.endedAtByActivity));
  return { startedAt, endedAt, waits: attempts.slice(1).map((a, i) => a.startedAt - endedAt[i]!), lags };
}
