import { Client } from '@temporalio/client';
import { connectClient } from '../temporal/sdk-adapter';
import { ConfigError, type Environment } from '../config/errors';
import { clientDefaultsFromEnv, clientSettingsFromEnv, DEFAULT_TASK_QUEUE } from '../config/settings';
import { AesGcmPayloadCodec } from '../encryption/codec';
import { encryptingDataConverter, keylessDataConverter } from '../encryption/data-converter';
import type { KeyRing } from '../encryption/keys';
import { clientTracingInterceptor } from '../telemetry/tracing';
import { validateDeliveries, validateDelivery, type ValidateOptions } from '../validation/delivery';
import type { OutageRecording } from '../endpoints/recording';
import type { TimelineBucket } from '../endpoints/timeline';
import type { EndpointDowntimeReport } from '../endpoints/types';
import type { Delivery, DeliveryInput } from '../delivery/types';
import type { DeliveryFilter } from '../delivery/filter';

import { Batcher, type BatcherOptions } from '../batching/batcher';
import { BatchSubmission, planSubmission, startBatch, type BatchHandle, type BatchOptions, type PlannedBatch } from '../batching/batches';
import { batchWorkflowId, type DeliveryWorkflow } from '../contract';
import { OrderingKeys } from '../starter/ordering-keys';
import { DeliveryStarter, type SingleSubmit } from '../starter/delivery-starter';
import { DeliveryHandle } from './delivery-handle';
import { heldEnd } from './holds';
import { DeliveryLists, type DeliveryPage, type DeliverySummary, type ListOptions, type PageRequest } from './lists';
import { mergedListing } from './batched-lists';
import { firstAttemptsQuery } from './first-attempts';
import { runsStandaloneActivities } from '../starter/first-attempt';
import { EndpointViews, type EndpointPage, type EndpointView } from './endpoints';
import { Redrives, type DeadLetterFilter, type RedriveReport } from './redrive';
import { secretTenantsFromEnvironment } from '../transports/secret-tenants';
import { mapBounded } from '../concurrency/pool';
import { EndpointHandle } from './endpoint-handle';

export { DEFAULT_TASK_QUEUE };
export { CANCEL_WAIT_MS, DeliveryHandle } from './delivery-handle';
export type { DeliveryPage, DeliverySummary, ListOptions, PageRequest } from './lists';
export type { EndpointPage, EndpointView } from './endpoints';
export type { RedriveReport } from './redrive';

export interface RedeliverOptions extends ValidateOptions {
  /** Task queue the workers poll. Default $REDELIVER_TASK_QUEUE, else `redeliver`. */
  taskQueue?: string;
  namespace?: string;
  /** A delivery continues as new once its history has this many events. Default 4,000 (Temporal warns at 10,240). */
  historyLimit?: number;
  /** Where settings not given here come from (docs/deploying.md lists the variables). Default process.env. */
  env?: Environment;
  /**
   * How long the workers use their copy of an endpoint's control (their `controlTtlMs`): a control change
   * returns once that has passed, so that it applies to every attempt that starts after it returned. Default 2 s,
   * the workers' default.
   */
  controlTtlMs?: number;
  /**
   * Index each batch's messages by their delivery ids, so that one delivered at once is found by its id (docs/batches.md,
   * "Finding a message by its id"). Default true; false only to measure what the index costs (the benchmark's baseline).
   */
  messageIndex?: boolean;
  /**
   * How a single submit makes its first attempt (docs/batches.md, "A single submit"): `workflow`, its delivery's
   * workflow from the start; `standalone`, a standalone activity where the server runs them (no workflow unless it
   * is not delivered at once). Default $REDELIVER_SINGLE_SUBMIT (Redeliver.connect), else `workflow`.
   */
  singleSubmit?: SingleSubmit;
}

export interface ConnectOptions extends RedeliverOptions {
  /** host:port of the Temporal frontend. Default $TEMPORAL_ADDRESS or localhost:7233. */
  address?: string;
  /** Payload encryption keys; `null` for none. Default $REDELIVER_ENCRYPTION_KEYS(_FILE), else none. */
  encryptionKeys?: KeyRing | null;
  /**
   * Start an OpenTelemetry span for each call and carry its context into the delivery's workflow, with the
   * tracer provider the application registered. Default: when $OTEL_TRACES_EXPORTER is set and not `none`.
   */
  tracing?: boolean;
  /**
   * Connect at the first call instead of now, and give up on a call after this many tries while Temporal is
   * unreachable (the SDK's default tries for about 20 s): for a process that must start and answer while
   * Temporal is away, such as `redeliver serve`. Default: connect now, the SDK's retries.
   */
  lazy?: { attempts: number };
}

/** The producer's API: submit deliveries, read their status, await their outcome. */
export class Redeliver {
  readonly taskQueue: string;
  /** Ordering keys (docs/ordering.md): a key's status and queue, and the release of a stopped key. */
  readonly ordering: OrderingKeys;

  /** How submit and redrive start a delivery's workflow. */
  private readonly starter: DeliveryStarter;
  private readonly lists: DeliveryLists;
  private readonly endpointViews: EndpointViews;
  private readonly redrives: Redrives;

  /** What submit checks a delivery with: the options, and the tenants of the secrets this process's environment configures. */
  private readonly validation: ValidateOptions;

  constructor(
    readonly client: Client,
    private readonly options: RedeliverOptions = {},
  ) {
    const defaults = clientDefaultsFromEnv(options.env);
    // where this process sees the worker's secrets (the HTTP API, the CLI), another tenant's is refused at submit
    this.validation = { ...options, secretTenants: options.secretTenants ?? secretTenantsFromEnvironment(options.env) };
    this.taskQueue = options.taskQueue ?? defaults.taskQueue;
    this.ordering = new OrderingKeys(client, this.taskQueue);
    this.starter = new DeliveryStarter(client, this.taskQueue, options.historyLimit, this.ordering, options.singleSubmit);
    this.lists = new DeliveryLists(client, this.taskQueue);
    this.endpointViews = new EndpointViews(client, this.taskQueue, this.lists);
    // the dead letters as deadLetters lists them
    this.redrives = new Redrives(client, this.starter, (filter) => this.deadLetters(filter));
    // with keys configured, a client without them would store message bodies in plain text
    if (defaults.encryptionConfigured && !client.options.loadedDataConverter.payloadCodecs.some((c) => c instanceof AesGcmPayloadCodec)) {
      throw new ConfigError([
        {
          variable: 'REDELIVER_ENCRYPTION_KEYS',
          message:
            'is set, but this Client has no payload codec: create it with `dataConverter: encryptingDataConverter(keys)`, or use Redeliver.connect()',
        },
      ]);
    }
  }

  /**
   * Connects to Temporal as the environment says, by Temporal's conventions (TEMPORAL_ADDRESS,
   * TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, a TOML profile: docs/deploying.md), with
   * payload encryption when keys are configured; options win over the environment. A bad variable is
   * refused with a ConfigError that names it.
   */
  static async connect(options: ConnectOptions = {}): Promise<Redeliver> {
    const settings = clientSettingsFromEnv(options.env);
    const namespace = options.namespace ?? settings.temporal.namespace;
    const taskQueue = options.taskQueue ?? settings.taskQueue;
    const keys = options.encryptionKeys === undefined ? settings.encryptionKeys : (options.encryptionKeys ?? undefined);
    const tracing = options.tracing ?? settings.tracing;
    const connectionOptions = {
      ...settings.temporal.connectionOptions,
      ...(options.address && { address: options.address }),
    };
    const connection = await connectClient(
      options.lazy ? { ...connectionOptions, lazy: true, retryAttempts: options.lazy.attempts } : connectionOptions,
    );
    const client = new Client({
      connection,
      namespace,
      // without keys, what is encrypted reads as such instead of failing (list, status, dead letters)
      dataConverter: keys ? encryptingDataConverter(keys) : keylessDataConverter(),
      ...(tracing && { interceptors: { workflow: [clientTracingInterceptor()] } }),
    });
    return new Redeliver(client, { ...options, namespace, taskQueue, singleSubmit: options.singleSubmit ?? settings.singleSubmit });
  }

  /** Closes the connection made by `connect`. */
  async close(): Promise<void> {
    await this.client.connection.close();
  }

  /** Refuses bad input with an InvalidInputError naming each wrong field; returns the normalized delivery. */
  validate(input: DeliveryInput | unknown): Delivery {
    return validateDelivery(input, this.validation);
  }

  /**
   * Submits one delivery. Idempotent: the same message id (for the same tenant and device) returns the
   * existing delivery, never a second one; `created` says which. Reusing a message id for a different
   * message is refused.
   */
  async submit(input: DeliveryInput): Promise<DeliveryHandle> {
    return this.submitValidated(this.validate(input));
  }

  private async submitValidated(delivery: Delivery): Promise<DeliveryHandle> {
    const { workflow, created } = await this.starter.submit(delivery);
    return new DeliveryHandle(workflow, created);
  }

  /**
   * Submits many; every input is validated before the first is started, so bad input starts nothing. A message
   * without an id gets one from its contents (contentMessageId): the same set submitted again sends nothing again.
   */
  async submitMany(inputs: DeliveryInput[], onProgress?: (done: number) => void, concurrency = 16): Promise<DeliveryHandle[]> {
    const deliveries = validateDeliveries(inputs, this.validation);
    let done = 0;
    return mapBounded(deliveries, concurrency, async (delivery) => {
      const handle = await this.submitValidated(delivery);
      onProgress?.(++done);
      return handle;
    });
  }

  /**
   * Submits many messages as batches (docs/batches.md): each batch is accepted in one Temporal start and makes
   * every message's first attempt; a message not delivered at once becomes its own delivery, with the same id,
   * controls and dead letters as a single submit. Every input is validated first (bad input starts nothing);
   * the set is cut by tenant and size (MAX_BATCH_MESSAGES, MAX_BATCH_BYTES). A batch id already used is not
   * started again; without one, the id comes from the batch's contents, so resubmitting the same set sends nothing.
   */
  async submitBatch(inputs: DeliveryInput[], options: BatchOptions = {}): Promise<BatchSubmission> {
    return this.startBatches(this.plan(inputs, options));
  }

  /** Every input of a set validated as submit validates it (a missing id from the message's contents), in order. */
  validateSet(inputs: readonly unknown[]): Delivery[] {
    return validateDeliveries(inputs, this.validation);
  }

  /** Every input validated as submit validates it, and the set cut into batches (planSubmission), without I/O. */
  plan(inputs: readonly unknown[], options: BatchOptions = {}): PlannedBatch[] {
    return planSubmission(inputs, options, this.validation);
  }

  /** Starts batches planned by `planSubmission` (what submitBatch does after planning; the CLI plans before it connects). */
  async startBatches(planned: PlannedBatch[]): Promise<BatchSubmission> {
    const batches = await Promise.all(planned.map((b) => this.startPlanned(b)));
    const ids = [...new Set(planned.flatMap((b) => b.deliveries.map((d) => d.deliveryId)))];
    return new BatchSubmission(
      batches,
      ids,
      (id) => this.getHandle(id).result(),
      (holdId, id) => heldEnd(this.client.workflow, holdId, id),
    );
  }

  /**
   * A batching submitter for producers that hand over one message at a time: `submit` resolves once the batch
   * holding the message is durably accepted. Close it (or flush) before exiting: pending messages wait for
   * `linger` at most.
   */
  batcher(options: BatcherOptions = {}): Batcher {
    return new Batcher({ validate: (input) => this.validate(input), startBatch: (b) => this.startPlanned(b) }, options);
  }

  private async startPlanned(batch: PlannedBatch): Promise<BatchHandle> {
    // ordered messages take their places first, in the order given, however the batches then run (docs/ordering.md)
    const { places, taken } = await this.ordering.takeForBatch(batch.deliveries, batchWorkflowId(batch.tenant, batch.batchId));
    const { historyLimit, messageIndex } = this.options;
    const handle = await startBatch(this.client, this.taskQueue, batch, { historyLimit, places, index: messageIndex ?? true });
    // a batch resubmitted starts nothing: places just taken for messages whose deliveries have ended go back
    if (!handle.created) await this.ordering.giveBackIfEnded(taken);
    return handle;
  }

  /**
   * Deliveries matching a filter, newest first, as the visibility store has them, and the messages of batches that
   * have no delivery of their own, merged in (ListOptions.batched).
   */
  list(filter: DeliveryFilter = {}, options: ListOptions = {}): AsyncIterable<DeliverySummary> {
    const deliveries = this.lists.list(filter);
    return options.batched === false ? deliveries : mergedListing(this.client.workflow, this.taskQueue, filter, deliveries);
  }

  /**
   * One page of `list`'s deliveries: at most `pageSize`, and the cursor of the next page (null after the last).
   * For callers that page across requests (the HTTP API); the cursor is Temporal's page token, so the messages of
   * batches and of first attempts without a delivery of their own are not merged in (docs/batches.md).
   */
  listPage(filter: DeliveryFilter, page: PageRequest): Promise<DeliveryPage> {
    return this.lists.listPage(filter, page);
  }

  /** How many deliveries match a filter (workflows of their own: not the messages of batches or of first attempts delivered at once). */
  count(filter: DeliveryFilter = {}): Promise<number> {
    return this.lists.count(filter);
  }

  /** Whether any message of these tenants goes to an endpoint: a delivery of its own, or a single submit's first attempt. */
  async sendsTo(endpoint: string, tenant: string[]): Promise<boolean> {
    if (await this.count({ endpoint, tenant })) return true;
    if (!(await runsStandaloneActivities(this.client))) return false;
    const { count } = await this.client.activity.count(firstAttemptsQuery(this.taskQueue, { endpoint, tenant }));
    return count > 0;
  }

  /** One endpoint's controls: its own limits (docs/endpoint-health.md, "Limits"), as every worker applies them. */
  endpoint(endpoint: string): EndpointHandle {
    return new EndpointHandle(this.client, this.taskQueue, endpoint, this.options.controlTtlMs);
  }

  /**
   * The endpoints deliveries go to, as their workflows see them (docs/endpoint-health.md): health, failure
   * rate, retries held back by the budget, downtime, and how many deliveries wait on each. With `endpoint`,
   * just that one (empty when no worker has reported attempts to it yet).
   */
  endpoints(endpoint?: string): Promise<EndpointView[]> {
    return this.endpointViews.endpoints(endpoint);
  }

  /**
   * One page of `endpoints`: at most `pageSize` endpoints (their workflows as Temporal lists them, newest
   * first; each page sorted by name), and the cursor of the next page (null after the last). Only the page's
   * endpoints are asked, all at once, so a page takes as long with 10 endpoints as with 10,000 (the HTTP API).
   */
  endpointsPage(page: PageRequest): Promise<EndpointPage> {
    return this.endpointViews.endpointsPage(page);
  }

  /** The guide's downtime of each endpoint (or of one), since a time if given. */
  downtime(options: { endpoint?: string; since?: Date } = {}): Promise<{ endpoint: string; report: EndpointDowntimeReport }[]> {
    return this.endpointViews.downtime(options);
  }

  /** The guide's downtime of one endpoint that has a workflow, since a time if given. */
  endpointDowntime(endpoint: string, since?: Date): Promise<{ endpoint: string; report: EndpointDowntimeReport }> {
    return this.endpointViews.endpointDowntime(endpoint, since);
  }

  /** An endpoint's attempts per second (the last hour of busy seconds), for a plot. */
  endpointTimeline(endpoint: string): Promise<TimelineBucket[]> {
    return this.endpointViews.endpointTimeline(endpoint);
  }

  /** An endpoint's recorded attempts, failure periods and arrivals since a time, to replay (docs/outage-replay.md). */
  endpointRecording(endpoint: string, since?: Date): Promise<OutageRecording> {
    return this.endpointViews.endpointRecording(endpoint, since);
  }

  /** Dead letters (rejected, expired, exhausted, dropped) matching a filter. */
  deadLetters(filter: DeadLetterFilter = {}): AsyncIterable<DeliverySummary> {
    return this.lists.deadLetters(filter);
  }

  /**
   * Redrives a dead letter: a new run of the same delivery id with the same message, target and policy,
   * counting attempts and age afresh, so the chain of runs is visible in the UI. One dead letter gets one
   * new run, whoever asks and however many ask at once (a request id per dead letter's run): `created` says
   * whether this call started it (false: the delivery is running again, or was redriven already). With
   * `runId`, only that run of the delivery is redriven: a delivery that has a newer run was redriven already.
   */
  redrive(deliveryId: string, options: { runId?: string } = {}): Promise<DeliveryHandle> {
    return this.redrives.redrive(deliveryId, options);
  }

  /**
   * Redrives every dead letter matching a filter, a few at a time; failures are reported, not thrown.
   * `redriven`: the deliveries this call started again; `alreadyRedriven`: those running again or redriven
   * by someone else (another call beside this one, or before it); `failed`: with the reason.
   */
  redriveAll(
    filter: DeadLetterFilter = {},
    options: { concurrency?: number; onProgress?: (done: number, total: number) => void; signal?: AbortSignal } = {},
  ): Promise<RedriveReport> {
    return this.redrives.redriveAll(filter, options);
  }

  /** A handle on an existing delivery by its id (`delivery/<tenant>/<device>/<messageId>`). */
  getHandle(deliveryId: string): DeliveryHandle {
    return new DeliveryHandle(this.client.workflow.getHandle<DeliveryWorkflow>(deliveryId), false);
  }
}
