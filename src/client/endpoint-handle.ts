import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidInputError } from '../errors';
import {
  checkSettingsChange,
  CONTROL_MEMO,
  CONTROL_TTL_MS,
  type EndpointControl,
  type EndpointSettingsInput,
  modeProblems,
  type ModeChange,
} from '../endpoints/controls';
import type { EndpointPace } from '../endpoints/types';
import { endpointModeUpdate, endpointSettingsUpdate, endpointStartOptions, endpointStatusQuery, type EndpointWorkflow } from '../contract';

/** How long `pace` waits for the endpoint's workflow to answer (a worker runs its query). */
const PACE_DEADLINE_MS = 3_000;

/**
 * One endpoint's controls, as an operator sets them (`redeliver endpoint …`, Redeliver.endpoint): they live
 * in the endpoint's workflow, which is started for them when no worker has reported to it yet, and every
 * worker of the task queue reads them before it sends (EndpointAdmission). A worker uses its copy for
 * the control's time to live at most, so a change returns once that has passed since the workflow took it:
 * it then applies to every attempt that starts after it returned.
 */
export class EndpointHandle {
  /** host[:port], as deliveries and `redeliver endpoints` name it. */
  readonly endpoint: string;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    endpoint: string,
    /** The workers' time to live of their copy of a control (ControlCache). */
    private readonly controlTtlMs = CONTROL_TTL_MS,
  ) {
    this.endpoint = endpointName(endpoint);
  }

  /**
   * Sets the endpoint's own limits: `{ maxInFlight: 50, rate: '200/s' }`; `'off'` for none, `null` for the
   * workers' default again. `priority: 'fifo'` shares scarce slots in arrival order instead of deadline-first; `outage: 'off'` lets a batch's messages
   * become deliveries of their own while the endpoint fails instead of waiting in an outage hold (`'hold'`). Refuses bad values with an InvalidInputError naming each field.
   */
  async set(change: EndpointSettingsInput): Promise<EndpointControl> {
    const { problems, change: checked } = checkSettingsChange(change);
    if (problems.length) throw new InvalidInputError(problems, 'endpoint settings');
    return this.update(endpointSettingsUpdate, checked);
  }

  /** Holds every attempt to the endpoint, none sent, until resumed: the deliveries wait (their max age runs on). */
  pause(reason?: string): Promise<EndpointControl> {
    return this.changeMode({ state: 'paused', ...(reason && { reason }) });
  }

  /** Lets attempts go again after a pause (the deliveries held come back within 30 s), or after the endpoint was disabled. */
  resume(): Promise<EndpointControl> {
    return this.changeMode({ state: 'active' });
  }

  /** Every attempt to the endpoint ends its delivery as a dead letter (`rejected`) that says so; redrive them once enabled. */
  disable(reason?: string): Promise<EndpointControl> {
    return this.changeMode({ state: 'disabled', ...(reason && { reason }) });
  }

  /** The same as resume: attempts go again. */
  enable(): Promise<EndpointControl> {
    return this.changeMode({ state: 'active' });
  }

  private changeMode(change: ModeChange): Promise<EndpointControl> {
    const problems = modeProblems(change);
    if (problems.length) throw new InvalidInputError(problems, 'endpoint mode');
    return this.update(endpointModeUpdate, change);
  }

  /** What the workers read: the endpoint's own settings (none when it has no workflow yet). */
  async control(): Promise<EndpointControl> {
    try {
      const described = await this.handle().describe();
      return (described.memo?.[CONTROL_MEMO] as EndpointControl | undefined) ?? { settings: {} };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { settings: {} };
      throw err;
    }
  }

  /**
   * The recovery pace of the workers sending to it (docs/endpoint-health.md, "Outages: holds and the recovery pace"):
   * null when none reported one lately, the endpoint has no workflow, or no worker answered within PACE_DEADLINE_MS
   * (the pace is the workflow's to tell, by a query: `show` still shows the control without a worker).
   */
  async pace(): Promise<EndpointPace | null> {
    try {
      const status = await this.client.withDeadline(Date.now() + PACE_DEADLINE_MS, () =>
        this.handle().query(endpointStatusQuery, Date.now()),
      );
      return status.pace ?? null;
    } catch {
      return null;
    }
  }

  private handle() {
    return this.client.workflow.getHandle<EndpointWorkflow>(endpointStartOptions(this.endpoint, this.taskQueue).workflowId);
  }

  /** Update-with-start: the endpoint's workflow is started for the change when it does not run yet. */
  private async update<A>(update: UpdateDefinition<EndpointControl, [A]>, change: A): Promise<EndpointControl> {
    const start = new WithStartWorkflowOperation<EndpointWorkflow>('endpointWorkflow', {
      ...endpointStartOptions(this.endpoint, this.taskQueue),
      taskQueue: this.taskQueue,
      args: [{ endpoint: this.endpoint }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    try {
      const control = await this.client.workflow.executeUpdateWithStart(update, { args: [change], startWorkflowOperation: start });
      // every copy a worker read before the change is past its time to live now: read again before it is used
      await sleep(this.controlTtlMs);
      return control;
    } catch (err) {
      // a worker that validates otherwise (another version): its reason, as a refusal of the input
      const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
      if (cause instanceof ApplicationFailure)
        throw new InvalidInputError([{ field: '(settings)', message: cause.message }], 'endpoint settings');
      throw err;
    }
  }
}

/** An endpoint as deliveries name it: host[:port]; a URL gives its host. Throws naming `endpoint` when it is neither. */
export function endpointName(value: string): string {
  const refuse = () =>
    new InvalidInputError([
      { field: 'endpoint', message: `must be host[:port] as \`redeliver endpoints\` shows it, or a URL; got ${JSON.stringify(value)}` },
    ]);
  let url: URL;
  try {
    url = new URL(value.includes('://') ? value : `http://${value}`);
  } catch {
    throw refuse();
  }
  if (!url.host || (!value.includes('://') && (url.pathname !== '/' || url.search || url.hash || url.username))) throw refuse();
  return url.host;
}
