import { createHash } from 'node:crypto';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowExecutionInfo,
  type WorkflowHandle,
} from '@temporalio/client';
import { Redeliver, type ConnectOptions } from './index';
import { clientDefaultsFromEnv } from '../config/settings';
import { ConflictError } from '../errors';
import { fairnessKeyOf } from '../starter/delivery-start';
import { isDerivedClientId } from '../subscription/client-id';
import {
  subscriptionIdOf,
  type CommandSubscription,
  type DowntimeReport,
  type SubscriptionInput,
  type SubscriptionResult,
  type SubscriptionStatus,
} from '../subscription/types';
import { validateSubscription } from '../validation/subscription';
import type { SecretTenantsLookup } from '../validation/secret-tenants';
import { secretTenantsFromEnvironment } from '../transports/secret-tenants';
import {
  Device,
  Endpoint,
  stopSubscriptionUpdate,
  subscriptionFacts,
  subscriptionStartOptions,
  subscriptionStatusQuery,
  Tenant,
  type CommandSubscriptionWorkflow,
} from '../contract';

export interface SubscriptionsOptions {
  /** Task queue the workers poll. Default $REDELIVER_TASK_QUEUE, else `redeliver`. */
  taskQueue?: string;
  /** A subscription continues as new once its history has this many events. Default 4,000. */
  historyLimit?: number;
  /** The tenants of the worker's secrets (ValidateOptions.secretTenants). Default: this process's environment. */
  secretTenants?: SecretTenantsLookup;
}

/** One line of a listing. */
export interface SubscriptionSummary {
  subscriptionId: string;
  runId: string;
  /** running, completed, failed, … (Temporal's status; `status()` tells more). */
  status: string;
  tenant: string | undefined;
  device: string | undefined;
  endpoint: string | undefined;
  startedAt: string;
  closedAt: string | null;
}

/**
 * Device command subscriptions: start one per device (a long-running workflow that keeps the MQTT
 * subscription alive and hands each command to an HTTP callback), read its status and downtime, stop it.
 */
export class Subscriptions {
  readonly taskQueue: string;
  private readonly secretTenants: SecretTenantsLookup;

  constructor(
    readonly client: Client,
    private readonly options: SubscriptionsOptions = {},
  ) {
    this.taskQueue = options.taskQueue ?? clientDefaultsFromEnv().taskQueue;
    this.secretTenants = options.secretTenants ?? secretTenantsFromEnvironment();
  }

  /** Connects as `Redeliver.connect` does (the environment, or the options). */
  static async connect(options: ConnectOptions & SubscriptionsOptions = {}): Promise<Subscriptions> {
    const redeliver = await Redeliver.connect(options);
    return new Subscriptions(redeliver.client, { ...options, taskQueue: redeliver.taskQueue });
  }

  /** Closes the connection made by `connect`. */
  async close(): Promise<void> {
    await this.client.connection.close();
  }

  /** Refuses bad input with an InvalidInputError naming each wrong field; returns the normalized subscription. */
  validate(input: SubscriptionInput | unknown): CommandSubscription {
    return validateSubscription(input, { secretTenants: this.secretTenants });
  }

  /**
   * Starts a device's command subscription. Idempotent: while the device's subscription runs, starting
   * it again with the same configuration returns it (`created: false`); with another configuration it is
   * refused (stop it first). A stopped subscription can be started again.
   */
  async start(input: SubscriptionInput): Promise<SubscriptionHandle> {
    const subscription = this.validate(input);
    const fingerprint = fingerprintOf(subscription);
    // a random client id is no part of the configuration (two starts make two); one from before issue 31 was this hash
    const legacyFingerprint = isDerivedClientId(subscription.broker.clientId)
      ? fingerprintOf(subscription, legacyClientIdOf(subscription.subscriptionId))
      : fingerprint;
    try {
      const handle = await this.client.workflow.start<CommandSubscriptionWorkflow>('commandSubscriptionWorkflow', {
        ...subscriptionStartOptions(subscription),
        taskQueue: this.taskQueue,
        // its tenant's share of the task queue (task-queue fairness), which its activities and the deliveries of
        // its command responses inherit (started by the workflow, they cannot name it themselves)
        priority: { fairnessKey: fairnessKeyOf(subscription.tenant) },
        args: [{ subscription, ...(this.options.historyLimit && { historyLimit: this.options.historyLimit }) }],
        memo: { fingerprint, subscription: subscriptionFacts(subscription) },
      });
      return new SubscriptionHandle(handle, true);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const handle = this.client.workflow.getHandle<CommandSubscriptionWorkflow>(subscription.subscriptionId);
      const existing = ((await handle.describe()).memo as Memo | undefined)?.fingerprint;
      if (existing !== undefined && existing !== fingerprint && existing !== legacyFingerprint) {
        throw new ConflictError(
          [{ field: '(subscription)', message: `${subscription.subscriptionId} is running with another configuration: stop it first` }],
          'subscription',
        );
      }
      return new SubscriptionHandle(handle, false);
    }
  }

  /** A handle on a subscription by its id (`subscription/<tenant>/<device>`), or by tenant and device. */
  getHandle(subscriptionId: string): SubscriptionHandle;
  getHandle(tenant: string, device: string): SubscriptionHandle;
  getHandle(idOrTenant: string, device?: string): SubscriptionHandle {
    const id = device === undefined ? subscriptionIdFrom(idOrTenant) : subscriptionIdOf(idOrTenant, device);
    return new SubscriptionHandle(this.client.workflow.getHandle<CommandSubscriptionWorkflow>(id), false);
  }

  /** Subscriptions on this task queue, newest first; `running` keeps the running ones only. */
  async *list(filter: { tenant?: string; device?: string; running?: boolean } = {}): AsyncIterable<SubscriptionSummary> {
    const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    const clauses = [`WorkflowType = 'commandSubscriptionWorkflow'`, `TaskQueue = ${quote(this.taskQueue)}`];
    if (filter.tenant) clauses.push(`Tenant = ${quote(filter.tenant)}`);
    if (filter.device) clauses.push(`Device = ${quote(filter.device)}`);
    if (filter.running) clauses.push(`ExecutionStatus = 'Running'`);
    for await (const info of this.client.workflow.list({ query: clauses.join(' AND ') })) yield summaryOf(info);
  }
}

export class SubscriptionHandle {
  constructor(
    readonly workflow: WorkflowHandle<CommandSubscriptionWorkflow>,
    /** Whether this `start` started it (false: it was running already). */
    readonly created: boolean,
  ) {}

  get subscriptionId(): string {
    return this.workflow.workflowId;
  }

  /** Where it stands: state, since when subscribed, the last error, commands, and the downtime report. */
  async status(): Promise<SubscriptionStatus> {
    const description = await this.workflow.describe();
    if (description.status.name === 'RUNNING') return this.workflow.query(subscriptionStatusQuery);
    // an ended subscription: its result says it all (no worker needed)
    const result = await this.workflow.result();
    const known = (description.memo as Memo | undefined)?.subscription;
    return {
      subscriptionId: this.subscriptionId,
      tenant: known?.tenant ?? '',
      device: known?.device ?? '',
      endpoint: known?.endpoint ?? '',
      topic: known?.topic ?? '',
      state: result.outcome,
      summary: `${result.outcome}: ${result.reason}`,
      subscribedSince: null,
      attempts: 0,
      holds: 0,
      nextAttemptAt: null,
      lastError: result.lastError,
      commands: result.commands,
      recentCommands: [],
      downtime: result.downtime,
    };
  }

  /**
   * The guide's downtime: every spell without a working subscription longer than the threshold (1 min),
   * their total, and the spell going on now.
   */
  async downtime(): Promise<DowntimeReport> {
    return (await this.status()).downtime;
  }

  /**
   * Stops the subscription: it unsubscribes (the broker drops its session), hands the commands already
   * received to the callback, and ends; resolves with its result. Stopping an ended one returns its result.
   */
  async stop(reason = ''): Promise<SubscriptionResult> {
    try {
      await this.workflow.executeUpdate(stopSubscriptionUpdate, { args: [reason] });
    } catch (err) {
      // already stopping, or ended: either way, its result is what the caller wants
      if (!(err instanceof WorkflowUpdateFailedError)) {
        const description = await this.workflow.describe().catch(() => undefined);
        if (!description || description.status.name === 'RUNNING') throw err;
      }
    }
    return this.result();
  }

  /** Waits for the subscription to end (stopped, or a `client` error such as refused credentials). */
  async result(): Promise<SubscriptionResult> {
    return this.workflow.result();
  }
}

/** `subscription/acme/sensor-1`, or `acme/sensor-1` for short. */
export function subscriptionIdFrom(id: string): string {
  return id.startsWith('subscription/') ? id : `subscription/${id}`;
}

interface Memo {
  fingerprint: string;
  subscription: ReturnType<typeof subscriptionFacts>;
}

/**
 * What makes two starts "the same subscription": everything but the start time, and the client id when
 * redeliver made it up (`asIf` puts another in its place: the fingerprint a subscription from before had).
 */
function fingerprintOf(subscription: CommandSubscription, asIf?: string): string {
  const { submittedAt: _submittedAt, ...rest } = subscription;
  const { clientId, ...broker } = rest.broker;
  const kept = asIf ?? (isDerivedClientId(clientId) ? undefined : clientId);
  const compared = { ...rest, broker: kept === undefined ? broker : { ...broker, clientId: kept } };
  return createHash('sha256').update(JSON.stringify(compared)).digest('base64url').slice(0, 22);
}

/** The client id a subscription that named none had before issue 31: a hash of its id, which anyone could compute. */
function legacyClientIdOf(subscriptionId: string): string {
  return `rdsub${createHash('sha256').update(subscriptionId).digest('hex').slice(0, 18)}`;
}

function summaryOf(info: WorkflowExecutionInfo): SubscriptionSummary {
  const sa = info.typedSearchAttributes;
  return {
    subscriptionId: info.workflowId,
    runId: info.runId,
    status: info.status.name.toLowerCase(),
    tenant: sa.get(Tenant),
    device: sa.get(Device),
    endpoint: sa.get(Endpoint),
    startedAt: info.startTime.toISOString(),
    closedAt: info.closeTime ? info.closeTime.toISOString() : null,
  };
}
