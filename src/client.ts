import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  CancelledFailure,
  ApplicationFailure,
  type WorkflowExecutionDescription,
  type WorkflowExecutionInfo,
  type WorkflowHandle,
} from '@temporalio/client';
import { DeliveryControlError, InvalidInputError, refusalKindOf, type RefusalKind } from './errors';
import { ConfigError, type Environment } from './config/errors';
import { clientDefaultsFromEnv, clientSettingsFromEnv, DEFAULT_TASK_QUEUE } from './config/settings';
import { AesGcmPayloadCodec, isEncryptedValue, type EncryptedValue } from './encryption/codec';
import { encryptingDataConverter, keylessDataConverter } from './encryption/data-converter';
import type { KeyRing } from './encryption/keys';
import { clientTracingInterceptor } from './telemetry/tracing';
import { validateDeliveries, validateDelivery, type ValidateOptions } from './validation/delivery';
import { retryProgressOf } from './activities/progress';
import { listExecutionsPage, startRequestId } from './temporal/sdk-adapter';
import type { RetryProgress } from './activities/retry';
import { humanDuration, waitingSummary } from './delivery/summary';
import { endpointWorkflowId } from './delivery/ids';
import type { OutageRecording } from './endpoints/recording';
import type { TimelineBucket } from './endpoints/timeline';
import type { EndpointDowntimeReport, EndpointStatus } from './endpoints/types';
import type { Delivery, DeliveryInput, DeliveryResult, DeliveryStatus } from './delivery/types';
import {
  DEAD_LETTER_STATES,
  endpointsQuery,
  OPEN_STATES,
  visibilityQuery,
  type DeadLetterState,
  type DeliveryFilter,
} from './delivery/filter';
import {
  Attempts,
  DeliveryKind,
  DeliveryState,
  Device,
  Endpoint,
  endpointDowntimeQuery,
  endpointRecordingQuery,
  endpointStatusQuery,
  endpointTimelineQuery,
  LastErrorClass,
  Tenant,
  pauseUpdate,
  resumeUpdate,
  retryNowUpdate,
  statusQuery,
} from './workflows/definitions';
import type { deliveryWorkflow } from './workflows/delivery';
import { Batcher, type BatcherOptions } from './batcher';
import { BatchSubmission, planSubmission, startBatch, type BatchHandle, type BatchOptions, type PlannedBatch } from './batches';
import { deliveryStart, fingerprintOf, type DeliveryMemo, type Redrive } from './delivery-start';
import { batchWorkflowId } from './batch/types';
import { OrderingKeys, type Place } from './ordering-keys';
import { secretTenantsFromEnvironment } from './transports/secret-tenants';

type Reuse = 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE';
import { EndpointHandle } from './endpoint-handle';

export { DEFAULT_TASK_QUEUE };

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
    const connection = options.lazy
      ? Connection.lazy({
          ...connectionOptions,
          interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: options.lazy.attempts }))],
        })
      : await Connection.connect(connectionOptions);
    const client = new Client({
      connection,
      namespace,
      // without keys, what is encrypted reads as such instead of failing (list, status, dead letters)
      dataConverter: keys ? encryptingDataConverter(keys) : keylessDataConverter(),
      ...(tracing && { interceptors: { workflow: [clientTracingInterceptor()] } }),
    });
    return new Redeliver(client, { ...options, namespace, taskQueue });
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
    // an ordered message takes its place on its key before it starts: a key that is full starts nothing
    const place = delivery.orderingKey === undefined ? null : await this.ordering.take(delivery);
    let started: DeliveryHandle;
    try {
      started = await this.start(delivery, 'REJECT_DUPLICATE', undefined, place ?? undefined);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      return this.resubmitted(delivery, place);
    }
    // it exists: its key may give it its turn
    if (place) await this.ordering.started([{ delivery, behind: place.behind }]);
    return started;
  }

  /** A message id submitted again: the existing delivery if it is the same message, refused (naming messageId) if not. */
  private async resubmitted(delivery: Delivery, place: Place | null): Promise<DeliveryHandle> {
    const handle = this.client.workflow.getHandle<typeof deliveryWorkflow>(delivery.deliveryId);
    const description = await handle.describe();
    const existing = (description.memo as unknown as DeliveryMemo | undefined)?.fingerprint;
    // a place taken just now for a delivery that exists goes back, unless that one runs and holds it (the same message)
    const holds = description.status.name === 'RUNNING' && existing === fingerprintOf(delivery);
    if (place && !place.existing && !holds) await this.ordering.withdraw(delivery);
    if (isEncryptedValue(existing)) {
      const message = `is not set, and ${delivery.deliveryId} exists encrypted: without the keys a resubmit cannot be told from a different message`;
      throw new ConfigError([{ variable: 'REDELIVER_ENCRYPTION_KEYS', message }]);
    }
    if (existing !== undefined && existing !== fingerprintOf(delivery)) {
      throw new InvalidInputError(
        [{ field: 'messageId', message: `${delivery.messageId} was already submitted with a different message or target` }],
        'delivery',
        true,
      );
    }
    return new DeliveryHandle(handle, false);
  }

  private async start(delivery: Delivery, reuse: Reuse, redrive?: Redrive, place?: Place): Promise<DeliveryHandle> {
    return new DeliveryHandle(await this.startRun(delivery, reuse, redrive, place), true);
  }

  private async startRun(delivery: Delivery, reuse: Reuse, redrive?: Redrive, place?: Place) {
    const { historyLimit } = this.options;
    const start = {
      taskQueue: this.taskQueue,
      reuse,
      ...(historyLimit && { historyLimit }),
      ...(redrive && { redrive }),
      ...(place && { place }),
    };
    return this.client.workflow.start<typeof deliveryWorkflow>('deliveryWorkflow', {
      ...deliveryStart(delivery, start),
      // a redrive's start is deduplicated by the server against the dead letter's run (see redriveRequestId)
      ...(redrive && startRequestId(redriveRequestId(redrive.of))),
    });
  }

  /**
   * Submits many; every input is validated before the first is started, so bad input starts nothing. A message
   * without an id gets one from its contents (contentMessageId): the same set submitted again sends nothing again.
   */
  async submitMany(inputs: DeliveryInput[], onProgress?: (done: number) => void, concurrency = 16): Promise<DeliveryHandle[]> {
    const deliveries = validateDeliveries(inputs, this.validation);
    const handles: DeliveryHandle[] = new Array(inputs.length);
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < inputs.length) {
        const i = next++;
        handles[i] = await this.submitValidated(deliveries[i]!);
        onProgress?.(++done);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
    return handles;
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
    return new BatchSubmission(batches, ids, (id) => this.getHandle(id).result());
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
    const handle = await startBatch(this.client, this.taskQueue, batch, this.options.historyLimit, places);
    // a batch resubmitted starts nothing: places just taken for messages whose deliveries have ended go back
    if (!handle.created) await this.ordering.giveBackIfEnded(taken);
    return handle;
  }

  /** Deliveries matching a filter, newest first, as the visibility store has them. */
  async *list(filter: DeliveryFilter = {}): AsyncIterable<DeliverySummary> {
    for await (const info of this.client.workflow.list({ query: visibilityQuery(filter, this.taskQueue) })) {
      yield summaryOf(info);
    }
  }

  /**
   * One page of `list`: at most `pageSize` deliveries, and the cursor of the next page (null after the last).
   * For callers that page across requests (the HTTP API); the cursor is Temporal's page token.
   */
  async listPage(filter: DeliveryFilter, page: PageRequest): Promise<DeliveryPage> {
    const { executions, nextCursor } = await this.executionsPage(visibilityQuery(filter, this.taskQueue), page);
    const deliveries = await Promise.all(executions.map(async (e) => summaryOf(await e.info())));
    return { deliveries, nextCursor };
  }

  /** A page of the workflows a visibility query matches, as Temporal lists them, and the cursor of the next (its page token). */
  private async executionsPage(query: string, page: PageRequest) {
    const response = await listExecutionsPage(this.client, {
      query,
      pageSize: page.pageSize,
      ...(page.cursor && { pageToken: Buffer.from(page.cursor, 'base64url') }),
    }).catch((err: unknown) => {
      // a token Temporal did not make: it answers INVALID_ARGUMENT, or UNKNOWN (the dev server)
      if (page.cursor && [2, 3].includes((err as { code?: number }).code!))
        throw new InvalidInputError([{ field: 'cursor', message: 'is not the nextCursor of a page of this listing' }], 'page');
      throw err;
    });
    const token = response.nextPageToken;
    return { executions: response.executions, nextCursor: token ? Buffer.from(token).toString('base64url') : null };
  }

  /** How many deliveries match a filter. */
  async count(filter: DeliveryFilter = {}): Promise<number> {
    return (await this.client.workflow.count(visibilityQuery(filter, this.taskQueue))).count;
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
  async endpoints(endpoint?: string): Promise<EndpointView[]> {
    const ids: string[] = [];
    if (endpoint) ids.push(endpointWorkflowId(endpoint, this.taskQueue));
    else {
      for await (const info of this.client.workflow.list({ query: endpointsQuery(this.taskQueue) })) ids.push(info.workflowId);
    }
    return this.endpointViews(ids);
  }

  /**
   * One page of `endpoints`: at most `pageSize` endpoints (their workflows as Temporal lists them, newest
   * first; each page sorted by name), and the cursor of the next page (null after the last). Only the page's
   * endpoints are asked, all at once, so a page takes as long with 10 endpoints as with 10,000 (the HTTP API).
   */
  async endpointsPage(page: PageRequest): Promise<EndpointPage> {
    const { executions, nextCursor } = await this.executionsPage(endpointsQuery(this.taskQueue), page);
    const endpoints = await this.endpointViews(executions.map((e) => e.workflowId));
    return { endpoints, nextCursor };
  }

  /** What the endpoints' workflows say of them now, and how many deliveries wait on each; by name. */
  private async endpointViews(ids: readonly string[]): Promise<EndpointView[]> {
    const views = await Promise.all(
      ids.map(async (id) => {
        const status = await this.client.workflow
          .getHandle(id)
          .query(endpointStatusQuery, Date.now())
          .catch((err: unknown) => {
            if (err instanceof WorkflowNotFoundError) return null;
            throw err;
          });
        if (!status) return null;
        const waiting = await this.count({ endpoint: status.endpoint, state: [...OPEN_STATES] });
        return { ...status, waiting };
      }),
    );
    return views.filter((v): v is EndpointView => v !== null).sort((a, b) => a.endpoint.localeCompare(b.endpoint));
  }

  /** The guide's downtime of each endpoint (or of one), since a time if given. */
  async downtime(options: { endpoint?: string; since?: Date } = {}): Promise<{ endpoint: string; report: EndpointDowntimeReport }[]> {
    const endpoints = await this.endpoints(options.endpoint);
    return Promise.all(endpoints.map((e) => this.endpointDowntime(e.endpoint, options.since)));
  }

  /** The guide's downtime of one endpoint that has a workflow, since a time if given. */
  async endpointDowntime(endpoint: string, since?: Date): Promise<{ endpoint: string; report: EndpointDowntimeReport }> {
    const report = await this.client.workflow
      .getHandle(endpointWorkflowId(endpoint, this.taskQueue))
      .query(endpointDowntimeQuery, since?.getTime(), Date.now());
    return { endpoint, report };
  }

  /** An endpoint's attempts per second (the last hour of busy seconds), for a plot. */
  async endpointTimeline(endpoint: string): Promise<TimelineBucket[]> {
    return this.client.workflow.getHandle(endpointWorkflowId(endpoint, this.taskQueue)).query(endpointTimelineQuery);
  }

  /** An endpoint's recorded attempts, failure periods and arrivals since a time, to replay (docs/outage-replay.md). */
  async endpointRecording(endpoint: string, since?: Date): Promise<OutageRecording> {
    return this.client.workflow
      .getHandle(endpointWorkflowId(endpoint, this.taskQueue))
      .query(endpointRecordingQuery, since?.getTime(), Date.now());
  }

  /** Dead letters (rejected, expired, exhausted, dropped) matching a filter. */
  deadLetters(
    filter: Omit<DeliveryFilter, 'state'> & { state?: DeadLetterState | DeadLetterState[] } = {},
  ): AsyncIterable<DeliverySummary> {
    return this.list({ ...filter, state: filter.state ?? [...DEAD_LETTER_STATES] });
  }

  /**
   * Redrives a dead letter: a new run of the same delivery id with the same message, target and policy,
   * counting attempts and age afresh, so the chain of runs is visible in the UI. One dead letter gets one
   * new run, whoever asks and however many ask at once (see redriveRequestId): `created` says whether this
   * call started it (false: the delivery is running again, or was redriven already). With `runId`, only
   * that run of the delivery is redriven: a delivery that has a newer run was redriven already.
   */
  async redrive(deliveryId: string, options: { runId?: string } = {}): Promise<DeliveryHandle> {
    const handle = this.client.workflow.getHandle<typeof deliveryWorkflow>(deliveryId);
    const description = await handle.describe();
    if (description.status.name === 'RUNNING' || (options.runId !== undefined && description.runId !== options.runId)) {
      return new DeliveryHandle(handle, false);
    }
    const state = description.typedSearchAttributes.get(DeliveryState);
    if (!DEAD_LETTER_STATES.includes(state as DeadLetterState)) {
      const current = state ?? description.status.name.toLowerCase();
      throw new DeliveryControlError(deliveryId, 'NotADeadLetter', `only dead letters can be redriven; this delivery is ${current}`);
    }
    const { message } = await this.client.workflow.getHandle<typeof deliveryWorkflow>(deliveryId, description.runId).result();
    if (!message) throw new DeliveryControlError(deliveryId, 'NoMessage', 'the dead letter has no message to redrive');
    const now = Date.now();
    if (message.policy.deadline !== null && message.policy.deadline <= now) {
      const deadline = new Date(message.policy.deadline).toISOString();
      throw new DeliveryControlError(deliveryId, 'DeadlinePassed', `its deadline ${deadline} has passed`);
    }
    const redrive = { of: description.runId, token: randomUUID() };
    // an ordered dead letter that stopped its key takes its place back at the head; any other, one at the end
    const place = message.orderingKey === undefined ? undefined : await this.ordering.take(message, { redrive: true });
    try {
      const started = await this.startRun({ ...message, submittedAt: now }, 'ALLOW_DUPLICATE', redrive, place);
      if (place) await this.ordering.started([{ delivery: message, behind: place.behind }]);
      // a start deduplicated by its request id gets the run an earlier one made: ours only if it has our token
      const run = await this.client.workflow.getHandle(deliveryId, started.firstExecutionRunId).describe();
      return new DeliveryHandle(started, (run.memo as Partial<DeliveryMemo> | undefined)?.redriveToken === redrive.token);
    } catch (err) {
      // running again: redriven by someone else in the meantime
      if (err instanceof WorkflowExecutionAlreadyStartedError) return new DeliveryHandle(handle, false);
      throw err;
    }
  }

  /**
   * Redrives every dead letter matching a filter, a few at a time; failures are reported, not thrown.
   * `redriven`: the deliveries this call started again; `alreadyRedriven`: those running again or redriven
   * by someone else (another call beside this one, or before it); `failed`: with the reason.
   */
  async redriveAll(
    filter: Parameters<Redeliver['deadLetters']>[0] = {},
    options: { concurrency?: number; onProgress?: (done: number, total: number) => void; signal?: AbortSignal } = {},
  ): Promise<RedriveReport> {
    // visibility lists every run that ended as a dead letter; only a delivery's latest one can still be redriven
    const latest = new Map<string, DeliverySummary>();
    for await (const letter of this.deadLetters(filter)) {
      const seen = latest.get(letter.deliveryId);
      if (!seen || seen.startedAt < letter.startedAt) latest.set(letter.deliveryId, letter);
    }
    const letters = [...latest.values()];
    const report: RedriveReport = { redriven: [], alreadyRedriven: [], failed: [] };
    let next = 0;
    let done = 0;
    const worker = async () => {
      // once aborted, the redrives in flight finish and no other starts
      while (next < letters.length && !options.signal?.aborted) {
        const { deliveryId, runId } = letters[next++]!;
        try {
          const handle = await this.redrive(deliveryId, { runId });
          (handle.created ? report.redriven : report.alreadyRedriven).push(deliveryId);
        } catch (err) {
          report.failed.push({ deliveryId, error: err instanceof Error ? err.message : String(err) });
        }
        options.onProgress?.(++done, letters.length);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 16) }, worker));
    return report;
  }

  /** A handle on an existing delivery by its id (`delivery/<tenant>/<device>/<messageId>`). */
  getHandle(deliveryId: string): DeliveryHandle {
    return new DeliveryHandle(this.client.workflow.getHandle<typeof deliveryWorkflow>(deliveryId), false);
  }
}

/**
 * How long `cancel()` waits for the delivery to end: an attempt in flight finishes first (10 s by default,
 * at most 5 min); past this it answers with what visibility says, and the cancel goes on.
 */
export const CANCEL_WAIT_MS = 60_000;

export class DeliveryHandle {
  constructor(
    readonly workflow: WorkflowHandle<typeof deliveryWorkflow>,
    /** Whether this submit started the delivery (false: it already existed). */
    readonly created: boolean,
  ) {}

  get deliveryId(): string {
    return this.workflow.workflowId;
  }

  /** Where the delivery stands: state, attempts, next attempt time, last error, the attempt log. */
  async status(): Promise<DeliveryStatus> {
    const description = await this.workflow.describe();
    if (description.status.name === 'RUNNING') {
      const status = await this.workflow.query(statusQuery);
      if (isEncryptedValue(status)) return encryptedStatus(this.deliveryId, description, status);
      // while Temporal retries the delivery, its progress is in the retrying activity, not the workflow
      const progress =
        status.state === 'waiting' ? await retryProgressOf(this.workflow.client.options.loadedDataConverter, description) : null;
      return progress && progress.attempts >= status.attempts ? withProgress(status, progress) : status;
    }
    // a closed delivery: its result says it all (no worker needed)
    const result = await this.result();
    if (result.encrypted) return encryptedStatus(this.deliveryId, description, { $encrypted: result.encrypted });
    return {
      deliveryId: this.deliveryId,
      ...(description.memo as unknown as DeliveryMemo).delivery,
      state: result.outcome,
      attempts: result.attempts,
      firstAttemptAt: result.firstAttemptAt,
      lastAttemptAt: result.lastAttemptAt,
      nextAttemptAt: null,
      lastError: result.lastError,
      attemptLog: [],
      summary: `${result.outcome}: ${result.reason}`,
      pause: null,
    };
  }

  /** Waits for the outcome. A cancelled delivery resolves to outcome `cancelled`. */
  async result(): Promise<DeliveryResult> {
    try {
      const result = await this.workflow.result();
      return isEncryptedValue(result) ? encryptedResult(this.deliveryId, await this.workflow.describe(), result) : result;
    } catch (err) {
      if (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure) {
        const description = await this.workflow.describe();
        return {
          deliveryId: this.deliveryId,
          messageId: idParts(this.deliveryId).messageId,
          outcome: 'cancelled',
          attempts: description.typedSearchAttributes.get(Attempts) ?? 0,
          firstAttemptAt: null,
          lastAttemptAt: null,
          lastError: null,
          reason: 'cancelled by request',
        };
      }
      throw err;
    }
  }

  /** Ends the current wait: the next attempt starts now. Refused unless the delivery is waiting. */
  async retryNow(): Promise<DeliveryStatus> {
    return this.control(() => this.workflow.executeUpdate(retryNowUpdate));
  }

  /**
   * Pauses the delivery: no further attempt until `resume` (an attempt in flight finishes). Paused time
   * does not count towards its max age; its deadline, an absolute time, still applies.
   */
  async pause(reason = ''): Promise<DeliveryStatus> {
    return this.control(() => this.workflow.executeUpdate(pauseUpdate, { args: [reason] }));
  }

  /** Resumes a paused delivery: it attempts when its planned time has come, at once if that has passed. */
  async resume(): Promise<DeliveryStatus> {
    return this.control(() => this.workflow.executeUpdate(resumeUpdate));
  }

  /**
   * Cancels the delivery: no further attempt is made; the outcome is `cancelled`. Resolves once it has
   * ended (an attempt in flight finishes first), with its status: the attempts the endpoint saw.
   */
  async cancel(options: { waitMs?: number } = {}): Promise<DeliveryStatus> {
    await this.control(async () => {
      // Temporal accepts a cancel request for a closed workflow silently; say that it has ended instead
      if ((await this.workflow.describe()).status.name !== 'RUNNING') throw new Error('closed');
      await this.workflow.cancel();
      return undefined;
    });
    // it ends once an attempt in flight has finished; with no worker to take the request, it would never
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), options.waitMs ?? CANCEL_WAIT_MS)));
    const ended = await Promise.race([this.result().then(() => true as const), waited]).finally(() => clearTimeout(timer));
    if (ended) return this.status();
    const summary = 'cancel requested: the delivery ends when a worker takes the request up (an attempt in flight finishes first)';
    return visibleStatus(this.deliveryId, await this.workflow.describe(), summary);
  }

  /** Runs a control, turning "refused" and "already ended" into a DeliveryControlError that says why. */
  private async control<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        // the update's validator refused: its failure's type is the kind (workflows/delivery-state.ts)
        const kind: RefusalKind = refusalKindOf(err.cause instanceof ApplicationFailure ? (err.cause.type ?? undefined) : undefined);
        throw new DeliveryControlError(this.deliveryId, kind, err.cause?.message ?? err.message);
      }
      const description = await this.workflow.describe().catch(() => undefined);
      if (description && description.status.name !== 'RUNNING') {
        const state = description.typedSearchAttributes.get(DeliveryState) ?? description.status.name.toLowerCase();
        throw new DeliveryControlError(this.deliveryId, 'Ended', `the delivery has ended (${state})`);
      }
      throw err;
    }
  }
}

/** A waiting delivery's status, brought up to date with its retrying activity's progress. */
function withProgress(status: DeliveryStatus, p: RetryProgress): DeliveryStatus {
  const iso = (t: number) => new Date(t).toISOString();
  const delayMs = Math.max(0, p.nextAttemptAt - Date.now());
  const words = waitingSummary({ delayMs, code: p.lastError.code, nextAttempt: p.attempts + 1, expiresInMs: null, hinted: p.hinted });
  return {
    ...status,
    attempts: p.attempts,
    lastAttemptAt: iso(p.lastAttemptAt),
    nextAttemptAt: iso(p.nextAttemptAt),
    lastError: p.lastError,
    attemptLog: p.attemptLog,
    summary: p.reservedAt !== null ? `${words}; the endpoint's retry budget holds it back for ${humanDuration(delayMs)}` : words,
  };
}

/** An endpoint as `redeliver endpoints` shows it: its workflow's status and the deliveries waiting on it. */
export interface EndpointView extends EndpointStatus {
  /** Deliveries to it not ended yet (pending, attempting, waiting, paused). */
  waiting: number;
}

/** Which page to read: at most `pageSize` items, after the page whose `nextCursor` this is. */
export interface PageRequest {
  pageSize: number;
  cursor?: string;
}

/** A page of endpoints (`endpointsPage`). */
export interface EndpointPage {
  endpoints: EndpointView[];
  /** Pass it back for the next page; null when there is none. */
  nextCursor: string | null;
}

/** A page of deliveries (`listPage`). */
export interface DeliveryPage {
  deliveries: DeliverySummary[];
  /** Pass it back for the next page; null when there is none. */
  nextCursor: string | null;
}

/** One line of a listing: what the visibility store knows of a delivery. */
export interface DeliverySummary {
  deliveryId: string;
  runId: string;
  state: string;
  kind: string | undefined;
  tenant: string | undefined;
  device: string | undefined;
  endpoint: string | undefined;
  attempts: number | undefined;
  lastErrorClass: string | undefined;
  startedAt: string;
  closedAt: string | null;
  /** Set when its memo is encrypted and this process has no key to read it: the rest of the row is in the clear. */
  encrypted?: true;
}

function summaryOf(info: WorkflowExecutionInfo): DeliverySummary {
  const sa = info.typedSearchAttributes;
  return {
    deliveryId: info.workflowId,
    runId: info.runId,
    state: sa.get(DeliveryState) ?? info.status.name.toLowerCase(),
    kind: sa.get(DeliveryKind),
    tenant: sa.get(Tenant),
    device: sa.get(Device),
    endpoint: sa.get(Endpoint),
    attempts: sa.get(Attempts),
    lastErrorClass: sa.get(LastErrorClass),
    startedAt: info.startTime.toISOString(),
    closedAt: info.closeTime ? info.closeTime.toISOString() : null,
    ...(isEncryptedValue(info.memo?.delivery) && { encrypted: true as const }),
  };
}

/** `delivery/<tenant>/<device>/<messageId>`: what the id alone says (it is never encrypted). */
function idParts(deliveryId: string): { tenant: string; device: string; messageId: string } {
  const [, tenant = '', device = '', ...rest] = deliveryId.split('/');
  return { tenant, device, messageId: rest.join('/') };
}

/** What a process without the keys can tell of an encrypted delivery: its id, and its search attributes. */
function inTheClear(deliveryId: string, description: WorkflowExecutionDescription, { $encrypted }: EncryptedValue) {
  const sa = description.typedSearchAttributes;
  const id = idParts(deliveryId);
  const state = (sa.get(DeliveryState) ?? description.status.name.toLowerCase()) as DeliveryStatus['state'];
  const errorClass = sa.get(LastErrorClass);
  const words =
    `${state}${errorClass ? ` (last error class: ${errorClass})` : ''}; its message, target, times and errors are encrypted with key ` +
    `${$encrypted.keyId ?? '(none named)'}, and this process has no REDELIVER_ENCRYPTION_KEYS to read them`;
  return {
    ...id,
    state,
    attempts: sa.get(Attempts) ?? 0,
    kind: sa.get(DeliveryKind),
    endpoint: sa.get(Endpoint) ?? '',
    words,
    encrypted: $encrypted,
  };
}

/** A delivery's status from what visibility keeps in the clear: for when neither its workflow nor its payloads can answer. */
function visibleStatus(
  deliveryId: string,
  description: WorkflowExecutionDescription,
  summary: string,
  encrypted?: EncryptedValue,
): DeliveryStatus {
  const d = inTheClear(deliveryId, description, encrypted ?? { $encrypted: { keyId: null } });
  return {
    deliveryId,
    messageId: d.messageId,
    kind: d.kind as DeliveryStatus['kind'],
    qos: null,
    tenant: d.tenant,
    device: d.device,
    endpoint: d.endpoint,
    state: d.state,
    attempts: d.attempts,
    firstAttemptAt: null,
    lastAttemptAt: null,
    nextAttemptAt: null,
    lastError: null,
    attemptLog: [],
    summary,
    pause: null,
    ...(encrypted && { encrypted: d.encrypted }),
  };
}

function encryptedStatus(deliveryId: string, description: WorkflowExecutionDescription, value: EncryptedValue): DeliveryStatus {
  return visibleStatus(deliveryId, description, inTheClear(deliveryId, description, value).words, value);
}

function encryptedResult(deliveryId: string, description: WorkflowExecutionDescription, value: EncryptedValue): DeliveryResult {
  const d = inTheClear(deliveryId, description, value);
  return {
    deliveryId,
    messageId: d.messageId,
    outcome: d.state as DeliveryResult['outcome'],
    attempts: d.attempts,
    firstAttemptAt: null,
    lastAttemptAt: null,
    lastError: null,
    reason: d.words,
    encrypted: d.encrypted,
  };
}

/**
 * The request id of every redrive of one dead letter. Temporal's server decides a start under the workflow
 * id's lock, and replaces the current run only if it is still the one it read (compare and set): a start
 * whose request id made the current run, running or closed, gets that run back instead of a new one; one
 * that finds another run running is refused. So while the run a redrive started is the delivery's latest,
 * any other redrive of the same dead letter, before or after it ended, starts nothing.
 */
function redriveRequestId(deadLetterRunId: string): string {
  return `redrive-of-${deadLetterRunId}`;
}

/** What a bulk redrive did with each dead letter it found. */
export interface RedriveReport {
  /** Started again by this call. */
  redriven: string[];
  /** Running again, or redriven by someone else (beside this call or before it). */
  alreadyRedriven: string[];
  failed: { deliveryId: string; error: string }[];
}
