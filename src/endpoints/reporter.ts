import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import { Endpoint, EndpointHealth, endpointReportSignal, endpointStatusQuery } from '../workflows/definitions';
import type { endpointWorkflow } from '../workflows/endpoint';
import { endpointWorkflowId } from '../delivery/ids';
import type { AttemptOutcome, EndpointReport } from './types';

/** Outcomes kept per endpoint while Temporal cannot be reached; older ones are dropped first. */
const MAX_BUFFERED = 10_000;
/** How long a report (or the question for the share) may take before it is given up for this round. */
const REPORT_DEADLINE_MS = 5_000;
/** How often a worker asks an endpoint how many workers retry to it (its share of the budget). */
const SHARE_EVERY_MS = 5_000;

interface Buffer {
  outcomes: AttemptOutcome[];
  heldBack: number;
  /** 1/N: this worker's part of the endpoint's retry budget. */
  share: number;
  shareAskedAt: number;
}

/**
 * A worker's side of endpoint health: it collects the outcome of every attempt and the retries its budget
 * held back, and reports them to each endpoint's workflow about once a second (signal-with-start, so the
 * first report creates it). It also learns from the endpoint how many workers retry to it, and takes 1/N
 * of the endpoint's retry budget. Reporting never holds an attempt up: a report that fails is sent with
 * the next one.
 */
export class EndpointReporter {
  readonly identity = `${process.pid}@${hostname()}/${randomUUID().slice(0, 8)}`;
  private readonly endpoints = new Map<string, Buffer>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Outcomes dropped because Temporal could not be reached for long. */
  dropped = 0;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly flushMs = 1_000,
  ) {}

  attempted(endpoint: string, outcome: AttemptOutcome): void {
    const b = this.buffer(endpoint);
    b.outcomes.push(outcome);
    if (b.outcomes.length > MAX_BUFFERED) {
      this.dropped += b.outcomes.length - MAX_BUFFERED;
      b.outcomes.splice(0, b.outcomes.length - MAX_BUFFERED);
    }
  }

  heldBack(endpoint: string): void {
    this.buffer(endpoint).heldBack++;
  }

  /** This worker's part of `endpoint`'s retry budget: 1/N with N workers reporting to it (1 until known). */
  share(endpoint: string): number {
    return this.endpoints.get(endpoint)?.share ?? 1;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  /** Stops reporting after one last report of what is buffered. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Sends what is buffered; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.send().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private buffer(endpoint: string): Buffer {
    let b = this.endpoints.get(endpoint);
    if (!b) this.endpoints.set(endpoint, (b = { outcomes: [], heldBack: 0, share: 1, shareAskedAt: 0 }));
    return b;
  }

  private async send(): Promise<void> {
    await Promise.all(
      [...this.endpoints].map(async ([endpoint, b]) => {
        if (b.outcomes.length === 0 && b.heldBack === 0) {
          // an endpoint this worker no longer retries to: forget it, and its share
          if (Date.now() - b.shareAskedAt > 4 * SHARE_EVERY_MS) this.endpoints.delete(endpoint);
          return;
        }
        const outcomes = b.outcomes.splice(0);
        const heldBack = b.heldBack;
        b.heldBack = 0;
        try {
          // a report that cannot go out in a few seconds waits for the next round, not for Temporal to come back
          const handle = await this.client.withDeadline(Date.now() + REPORT_DEADLINE_MS, () => this.client.workflow.signalWithStart<typeof endpointWorkflow, [EndpointReport]>('endpointWorkflow', {
            workflowId: endpointWorkflowId(endpoint),
            taskQueue: this.taskQueue,
            args: [{ endpoint }],
            signal: endpointReportSignal,
            signalArgs: [{ worker: this.identity, outcomes, heldBack }],
            typedSearchAttributes: [
              { key: Endpoint, value: endpoint },
              { key: EndpointHealth, value: 'healthy' },
            ],
            staticSummary: `endpoint ${endpoint}: health, retry budget and downtime`,
          }));
          if (Date.now() - b.shareAskedAt >= SHARE_EVERY_MS) {
            b.shareAskedAt = Date.now();
            const status = await this.client.withDeadline(Date.now() + REPORT_DEADLINE_MS, () => handle.query(endpointStatusQuery));
            b.share = 1 / Math.max(1, status.workers);
          }
        } catch {
          // Temporal unreachable or the query timed out: send these with the next report
          b.outcomes.unshift(...outcomes);
          b.heldBack += heldBack;
        }
      }),
    );
  }
}
