import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  endpointReportSignal,
  endpointStartOptions,
  tenantDeadLettersSignal,
  tenantEventsStartOptions,
  type EndpointWorkflow,
  type TenantEventsWorkflow,
} from '../contract';
import { sameProfile } from '../endpoints/recording';
import { mergeTally } from '../endpoints/operational-events';
import { DEFAULT_MAX_ENDPOINTS_PER_TENANT } from '../config/settings';
import type { TenantReport } from '../endpoints/tenant-events';
import { EVENTS_TENANT } from '../activities/operational-events';
import { activityPollers } from '../temporal/sdk-adapter';
import type {
  AttemptOutcome,
  DeadLetterOutcome,
  DeadLetterTally,
  DeliveryEnd,
  EndpointReport,
  PaceView,
  ReportedBudget,
  RetryLateness,
} from '../endpoints/types';

/** Outcomes kept per endpoint while Temporal cannot be reached; older ones are dropped first. */
const MAX_BUFFERED = 10_000;
/** How long a report (or the question for the share) may take before it is given up for this round. */
const REPORT_DEADLINE_MS = 5_000;
/** How often a worker counts the workers on its task queue (its share of every endpoint's budget). */
const SHARE_EVERY_MS = 10_000;
/** A report that could not open its endpoint's workflow and found none: the next ones are dropped for this long, unasked. */
const ABSENT_RECHECK_MS = 10_000;
/** An endpoint with nothing to report for this long is forgotten. */
const FORGET_MS = 60_000;
/** A pace is reported this long after it changed, healthy or not (the change reaches the workflow); while not healthy, always. */
const PACE_RECENT_MS = 10_000;
/** The distinct endpoints a tenant's attempts open workflows for are counted over this window (REDELIVER_MAX_ENDPOINTS_PER_TENANT). */
export const TENANT_ENDPOINTS_WINDOW_MS = 10 * 60_000;

interface Buffer {
  outcomes: AttemptOutcome[];
  heldBack: number;
  ended: DeliveryEnd[];
  late: RetryLateness[];
  /** Deliveries that ended dead letters, tallied: a storm of them stays one small record. */
  deadLetters?: DeadLetterTally;
  /** When this worker last had something to report about the endpoint. */
  activeAt: number;
  /** An attempt of a tenant within its bound went to it: a report may start its workflow (else it only reaches one that runs). */
  opens: boolean;
  /** Its workflow was not found by a report that could not start it: reports are dropped until then. */
  absentUntil?: number;
}

/** A tenant's dead letters on their way to its workflow (tenantEventsWorkflow). */
interface TenantBuffer {
  tally?: DeadLetterTally;
  endpoints: Record<string, number>;
  /** A report sent that may not have arrived: sent again as it is, under its id, so that it counts once. */
  unsent?: TenantReport;
}

/**
 * A worker's side of endpoint health: it collects the outcome of every attempt and the retries its budget
 * held back, and reports them to each endpoint's workflow about once a second (signal-with-start, so the
 * first report creates it). Reporting never holds an attempt up: a report that fails is sent with the next.
 *
 * It also sets the worker's share of every endpoint's retry budget: 1/N, N the workers polling the task
 * queue for attempts. Temporal hands attempts to all of them alike, so each sees about 1/N of the retries
 * to any endpoint; and N is known before the first retry, so the bound holds from the start.
 */
export class EndpointReporter {
  readonly identity: string;
  private readonly endpoints = new Map<string, Buffer>();
  private readonly deadLettersByTenant = new Map<string, TenantBuffer>();
  private reports = 0;
  private timer: NodeJS.Timeout | undefined;
  private shareTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private workers = 1;
  /** Outcomes dropped because Temporal could not be reached for long. */
  dropped = 0;
  /** The worker's recovery pacer, whose pace of each endpoint goes with its reports. */
  private pacer: { describe(endpoint: string): PaceView } | undefined;
  /** Outcomes not reported: their endpoint has no workflow, and their tenant had opened its bound of them (REDELIVER_MAX_ENDPOINTS_PER_TENANT). */
  unopened = 0;
  /** Per tenant, the endpoints its attempts opened workflows for in the window, and when each was last attempted. */
  private readonly endpointsOpened = new Map<string, Map<string, number>>();
  private readonly maxEndpointsPerTenant: number | null;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    options: {
      identity?: string;
      flushMs?: number;
      budget?: ReportedBudget;
      /** Distinct endpoints one tenant's attempts may open workflows for within TENANT_ENDPOINTS_WINDOW_MS; null: no bound. */
      maxEndpointsPerTenant?: number | null;
      /** Told when this worker's share of the budget changes (the worker's log, at INFO). */
      log?: (message: string) => void;
    } = {},
  ) {
    this.identity = options.identity ?? `${process.pid}@${hostname()}/${randomUUID().slice(0, 8)}`;
    this.flushMs = options.flushMs ?? 1_000;
    this.budget = options.budget;
    this.log = options.log ?? (() => undefined);
    this.maxEndpointsPerTenant =
      options.maxEndpointsPerTenant === undefined ? DEFAULT_MAX_ENDPOINTS_PER_TENANT : options.maxEndpointsPerTenant;
  }

  private readonly flushMs: number;
  private readonly log: (message: string) => void;
  /** The retry budget this worker runs with, told to each endpoint: a replay of its outages starts from it. */
  private readonly budget: ReportedBudget | undefined;

  /** An attempt's outcome; `tenant`: whose delivery it was (none: the endpoint's workflow may be started for it). */
  attempted(endpoint: string, outcome: AttemptOutcome, attempt?: { tenant?: string }): void {
    const b = this.buffer(endpoint);
    if (!b.opens && this.opensFor(attempt?.tenant, endpoint)) {
      b.opens = true;
      b.absentUntil = undefined;
    }
    // attempts that end alike within a second travel as one, with a count: reports stay small
    const last = b.outcomes[b.outcomes.length - 1];
    if (
      last &&
      last.ok === outcome.ok &&
      last.code === outcome.code &&
      last.retry === outcome.retry &&
      sameProfile(last.arrival, outcome.arrival) &&
      Math.floor(last.at / 1000) === Math.floor(outcome.at / 1000) &&
      outcome.at >= last.at
    ) {
      last.count = (last.count ?? 1) + (outcome.count ?? 1);
      return;
    }
    b.outcomes.push({ ...outcome });
    if (b.outcomes.length > MAX_BUFFERED) {
      this.dropped += b.outcomes.length - MAX_BUFFERED;
      b.outcomes.splice(0, b.outcomes.length - MAX_BUFFERED);
    }
  }

  /**
   * Whether `tenant`'s attempt may open the endpoint's workflow: one of the distinct endpoints its attempts went to
   * within the window, up to its bound. Beyond it the attempts still go; their reports only reach a workflow that runs.
   */
  private opensFor(tenant: string | undefined, endpoint: string): boolean {
    const max = this.maxEndpointsPerTenant;
    if (tenant === undefined || max === null) return true;
    const now = Date.now();
    let seen = this.endpointsOpened.get(tenant);
    if (!seen) this.endpointsOpened.set(tenant, (seen = new Map()));
    if (!seen.has(endpoint) && seen.size >= max) {
      for (const [e, at] of seen) if (now - at > TENANT_ENDPOINTS_WINDOW_MS) seen.delete(e);
      if (seen.size >= max) return false;
    }
    seen.set(endpoint, now);
    return true;
  }

  /** Reports the pace of each endpoint it reports on, while not healthy or just changed (docs/endpoint-health.md, "Outages"). */
  showPaceOf(pacer: { describe(endpoint: string): PaceView }): void {
    this.pacer = pacer;
  }

  heldBack(endpoint: string): void {
    this.buffer(endpoint).heldBack++;
  }

  /**
   * A delivery to the endpoint ended a dead letter (tellDeadLetter, through the worker's sink):
   * told per tenant across its endpoints; the alerts' own (tenant `redeliver`) per endpoint, as an operator URL
   * is not told about itself.
   */
  deadLettered(endpoint: string, deliveryId: string, outcome: DeadLetterOutcome, at: number, tenant: string): void {
    const one = { deliveryId, at };
    const tally: DeadLetterTally = { count: 1, outcomes: { [outcome]: 1 }, first: one, last: one };
    if (tenant === EVENTS_TENANT) {
      const b = this.buffer(endpoint);
      b.opens ||= this.opensFor(tenant, endpoint);
      b.deadLetters = mergeTally(b.deadLetters, tally);
      return;
    }
    let t = this.deadLettersByTenant.get(tenant);
    if (!t) this.deadLettersByTenant.set(tenant, (t = { endpoints: {} }));
    t.tally = mergeTally(t.tally, tally);
    t.endpoints[endpoint] = (t.endpoints[endpoint] ?? 0) + 1;
  }

  /** A delivery's retrying ended without delivering it. */
  ended(endpoint: string, outcome: DeliveryEnd['outcome'], at: number): void {
    const ended = this.buffer(endpoint).ended;
    const last = ended[ended.length - 1];
    if (last?.outcome === outcome && Math.floor(last.at / 1000) === Math.floor(at / 1000)) last.count = (last.count ?? 1) + 1;
    else ended.push({ at, outcome });
  }

  /** A retry planned for `plannedAt` went out `lateMs` after it. */
  retried(endpoint: string, lateMs: number, plannedAt: number): void {
    const late = this.buffer(endpoint).late;
    const last = late[late.length - 1];
    if (last && Math.floor(last.plannedAt / 1000) === Math.floor(plannedAt / 1000)) {
      last.count++;
      last.totalMs += lateMs;
    } else late.push({ plannedAt, count: 1, totalMs: lateMs });
  }

  /** This worker's part of an endpoint's retry budget: 1/N with N workers on the task queue. */
  share(_endpoint?: string): number {
    return 1 / this.workers;
  }

  /** Starts reporting; resolves once the worker knows its share of the budget (or could not learn it: 1). */
  async start(): Promise<void> {
    this.timer ??= setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
    this.shareTimer ??= setInterval(() => void this.countWorkers(), SHARE_EVERY_MS);
    this.shareTimer.unref();
    await this.countWorkers();
  }

  /** Stops reporting after one last report of what is buffered. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.shareTimer);
    this.timer = this.shareTimer = undefined;
    await this.flush();
  }

  /** N: the workers polling the task queue for activities (this one counted even before its first poll). */
  async countWorkers(): Promise<void> {
    try {
      const pollers = await this.client.withDeadline(Date.now() + REPORT_DEADLINE_MS, () => activityPollers(this.client, this.taskQueue));
      const identities = new Set(pollers);
      identities.add(this.identity);
      if (identities.size !== this.workers)
        this.log(
          `retry budget: this worker now takes 1/${identities.size} of each endpoint's (${identities.size} workers poll task queue "${this.taskQueue}")`,
        );
      this.workers = identities.size;
    } catch {
      // Temporal unreachable: keep the last count
    }
  }

  /** Sends what is buffered; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.send().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private buffer(endpoint: string): Buffer {
    let b = this.endpoints.get(endpoint);
    if (!b) this.endpoints.set(endpoint, (b = { outcomes: [], heldBack: 0, ended: [], late: [], activeAt: Date.now(), opens: false }));
    b.activeAt = Date.now();
    return b;
  }

  private async send(): Promise<void> {
    this.forgetTenants();
    await Promise.all([...[...this.endpoints].map(([endpoint, b]) => this.report(endpoint, b)), this.sendTenants()]);
  }

  private async report(endpoint: string, b: Buffer): Promise<void> {
    const pace = this.paceOf(endpoint);
    if (b.outcomes.length === 0 && b.heldBack === 0 && b.ended.length === 0 && b.late.length === 0 && !b.deadLetters) {
      // an endpoint this worker no longer sends to (its pace healthy long since). A pace goes only with attempts: one
      // that changes by time alone (failing by a spell, healthy when quiet) costs the endpoint's workflow no report,
      // so that its history stays flat however long an outage with nothing sent lasts
      if (!pace && Date.now() - b.activeAt > FORGET_MS) this.endpoints.delete(endpoint);
      return;
    }
    const outcomes = b.outcomes.splice(0);
    const ended = b.ended.splice(0);
    const late = b.late.splice(0);
    const heldBack = b.heldBack;
    const deadLetters = b.deadLetters;
    b.heldBack = 0;
    b.deadLetters = undefined;
    const unopened = () => (this.unopened += outcomes.reduce((n, o) => n + (o.count ?? 1), 0));
    if (!b.opens && b.absentUntil !== undefined && Date.now() < b.absentUntil) return void unopened();
    const report: EndpointReport = {
      worker: this.identity,
      outcomes,
      heldBack,
      ...(ended.length && { ended }),
      ...(late.length && { late }),
      ...(this.budget && { budget: this.budget }),
      ...(deadLetters && { deadLetters }),
      ...(pace && { pace }),
    };
    try {
      // a report that cannot go out in a few seconds waits for the next round, not for Temporal to come back
      await this.client.withDeadline(Date.now() + REPORT_DEADLINE_MS, () => this.signal(endpoint, report, b.opens));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        // no workflow, and none of this round's tenants may open one: dropped, and not asked again for a while
        b.absentUntil = Date.now() + ABSENT_RECHECK_MS;
        return void unopened();
      }
      // Temporal unreachable: send these with the next report
      b.outcomes.unshift(...outcomes);
      b.ended.unshift(...ended);
      b.late.unshift(...late);
      b.heldBack += heldBack;
      if (deadLetters) b.deadLetters = mergeTally(b.deadLetters, deadLetters);
    }
  }

  /** The endpoint's pace to report: while not healthy, or changed lately (reports stay small while all is well). */
  private paceOf(endpoint: string): PaceView | undefined {
    const view = this.pacer?.describe(endpoint);
    return view && (view.state !== 'healthy' || Date.now() - view.changedAt < PACE_RECENT_MS) ? view : undefined;
  }

  /** Signal-with-start when the report may open the endpoint's workflow; otherwise a signal, which reaches only one that runs. */
  private async signal(endpoint: string, report: EndpointReport, opens: boolean): Promise<void> {
    const options = endpointStartOptions(endpoint, this.taskQueue);
    if (!opens) return this.client.workflow.getHandle(options.workflowId).signal(endpointReportSignal, report);
    await this.client.workflow.signalWithStart<EndpointWorkflow, [EndpointReport]>('endpointWorkflow', {
      ...options,
      taskQueue: this.taskQueue,
      args: [{ endpoint }],
      signal: endpointReportSignal,
      signalArgs: [report],
    });
  }

  /** Forgets what each tenant attempted longer ago than the window: the bound counts recent endpoints, and memory stays bounded. */
  private forgetTenants(): void {
    const now = Date.now();
    for (const [tenant, seen] of this.endpointsOpened) {
      for (const [endpoint, at] of seen) if (now - at > TENANT_ENDPOINTS_WINDOW_MS) seen.delete(endpoint);
      if (seen.size === 0) this.endpointsOpened.delete(tenant);
    }
  }

  /** Each tenant's dead letters since the last report, one report at a time: at most one waits to be sent again. */
  private async sendTenants(): Promise<void> {
    await Promise.all(
      [...this.deadLettersByTenant].map(async ([tenant, t]) => {
        if (!t.unsent && t.tally) {
          t.unsent = { id: `${this.identity}/${++this.reports}`, tally: t.tally, endpoints: t.endpoints };
          [t.tally, t.endpoints] = [undefined, {}];
        }
        const report = t.unsent;
        if (!report) return void this.deadLettersByTenant.delete(tenant);
        try {
          await this.client.withDeadline(Date.now() + REPORT_DEADLINE_MS, () =>
            this.client.workflow.signalWithStart<TenantEventsWorkflow, [TenantReport]>('tenantEventsWorkflow', {
              ...tenantEventsStartOptions(tenant, this.taskQueue),
              taskQueue: this.taskQueue,
              args: [{ tenant }],
              signal: tenantDeadLettersSignal,
              signalArgs: [report],
            }),
          );
          t.unsent = undefined;
        } catch {
          // Temporal unreachable, or the answer lost: the same report goes again with the next round
        }
      }),
    );
  }
}
