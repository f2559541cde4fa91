/**
 * What redeliver needs from Temporal beyond the SDK's documented surface, in one place: the raw gRPC calls
 * (workflow service), the SDK's internal helpers (`@temporalio/client/lib/…`, `@temporalio/common/lib/…`), and
 * the untyped activity heartbeat details. An SDK upgrade that moves one of them breaks here, and nowhere else.
 */
import * as grpc from '@grpc/grpc-js';
import {
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type Client,
  type ConnectionOptions,
  type WorkflowExecutionDescription,
  type WorkflowClient,
  type WorkflowExecutionInfo,
  type WorkflowService,
} from '@temporalio/client';
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import { InternalWorkflowStartOptionsSymbol } from '@temporalio/client/lib/internal';
import type { LoadedDataConverter, Payload } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';

/** A client or a connection: what holds the workflow service. */
type Service<K extends keyof WorkflowService> = { workflowService: Pick<WorkflowService, K> };

/** Resolves when the Temporal service answers a cheap call (its system info), rejects with the call's error. */
export async function pingService(connection: Service<'getSystemInfo'>): Promise<void> {
  await connection.workflowService.getSystemInfo({});
}

/** How many workflows of a namespace a visibility query matches, asked of a connection (no client needed). */
export async function countExecutions(connection: Service<'countWorkflowExecutions'>, namespace: string, query: string): Promise<number> {
  const { count } = await connection.workflowService.countWorkflowExecutions({ namespace, query });
  return Number(count ?? 0);
}

/**
 * What an activity saved with its last heartbeat on an earlier attempt, which Temporal hands to the next one
 * (undefined on a first attempt). The caller names the shape it saved: the SDK types it `any`.
 */
export function savedHeartbeat<T>(info: { heartbeatDetails?: unknown }): T | undefined {
  return info.heartbeatDetails as T | undefined;
}

/**
 * What a workflow's pending activity of a type saved with its last heartbeat, from Temporal's description of the
 * workflow (a heartbeat costs no history event: the workflow itself never sees it); null when no such activity is
 * pending or it has not heartbeated yet.
 */
export async function pendingActivityHeartbeat<T>(
  converter: LoadedDataConverter,
  description: Pick<WorkflowExecutionDescription, 'raw'>,
  activityType: string,
): Promise<T | null> {
  const pending = description.raw.pendingActivities?.find((a) => a.activityType?.name === activityType);
  if (!pending?.heartbeatDetails?.payloads?.length) return null;
  return decodeFromPayloadsAtIndex<T>(converter, 0, pending.heartbeatDetails.payloads);
}

/**
 * The first argument of a workflow run's start as Temporal stores it: encoded, as the codec left it. Takes the
 * run as an activity's info names it (its workflow's namespace and execution).
 */
export async function storedStartInput(
  client: Pick<Client, 'workflowService'>,
  run: { workflowNamespace?: string; workflowExecution?: { workflowId: string; runId?: string } },
): Promise<Payload | undefined> {
  const { workflowNamespace: namespace, workflowExecution: execution } = run;
  const { history } = await client.workflowService.getWorkflowExecutionHistory({ namespace, execution, maximumPageSize: 1 });
  return history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0] ?? undefined;
}

/**
 * The first payload of an activity's input as Temporal stores it: a workflow's activity, that of its run's start (the
 * workflow's input); a standalone activity (no workflow), its own.
 */
export async function storedActivityInput(
  client: Pick<Client, 'workflowService'>,
  info: {
    inWorkflow: boolean;
    namespace: string;
    activityId: string;
    activityRunId?: string;
    workflowNamespace?: string;
    workflowExecution?: { workflowId: string; runId?: string };
  },
): Promise<Payload | undefined> {
  if (info.inWorkflow) return storedStartInput(client, info);
  const { namespace, activityId, activityRunId: runId } = info;
  const described = await client.workflowService.describeActivityExecution({
    namespace,
    activityId,
    ...(runId && { runId }),
    includeInput: true,
  });
  return described.input?.payloads?.[0] ?? undefined;
}

/** The first argument of a workflow run's start, decoded by the client's data converter (an EncryptedValue to a process without keys); undefined when it has none. */
export async function startArgument<T>(client: WorkflowClient, workflowId: string, runId?: string): Promise<T | undefined> {
  const execution = { workflowId, ...(runId && { runId }) };
  const stored = await storedStartInput(client, { workflowNamespace: client.options.namespace, workflowExecution: execution });
  return stored && decodeFromPayloadsAtIndex<T>(client.options.loadedDataConverter, 0, [stored]);
}

/** The identities of the workers polling a task queue for activities, as Temporal last saw them. */
export async function activityPollers(client: Client, taskQueue: string): Promise<string[]> {
  const response = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  });
  return (response.pollers ?? []).map((p) => p.identity ?? '');
}

/** A workflow as a visibility listing has it: its id, and the rest decoded (memo, search attributes) when asked. */
export interface ListedExecution {
  workflowId: string;
  /** Decoded as `client.workflow.list` decodes it. */
  info(): Promise<WorkflowExecutionInfo>;
}

/** One page of the workflows a visibility query matches. */
export interface ExecutionsPage {
  executions: ListedExecution[];
  /** Temporal's token of the next page; null after the last. */
  nextPageToken: Uint8Array | null;
}

/**
 * A page of `client.workflow.list`, which pages only inside its own iteration: callers that page across requests
 * (the HTTP API) keep Temporal's page token themselves. Errors are the gRPC call's (a token Temporal did not make
 * is refused with its status code).
 */
export async function listExecutionsPage(
  client: Client,
  request: { query: string; pageSize: number; pageToken?: Uint8Array },
): Promise<ExecutionsPage> {
  const { namespace, loadedDataConverter } = client.options;
  const response = await client.workflowService.listWorkflowExecutions({
    namespace,
    query: request.query,
    pageSize: request.pageSize,
    ...(request.pageToken && { nextPageToken: request.pageToken }),
  });
  const executions = (response.executions ?? []).map((raw) => ({
    workflowId: raw.execution?.workflowId ?? '',
    info: () => executionInfoFromRaw(raw, loadedDataConverter, raw, namespace),
  }));
  const token = response.nextPageToken;
  return { executions, nextPageToken: token?.length ? token : null };
}

/**
 * Options for `client.workflow.start` that give the start this request id: the server treats a start with the
 * request id of an earlier one as that one (a retried start, not a second run). The SDK sets it only internally.
 */
export function startRequestId(requestId: string): { [InternalWorkflowStartOptionsSymbol]: { requestId: string } } {
  return { [InternalWorkflowStartOptionsSymbol]: { requestId } };
}

/**
 * A history as a recorded fixture's text: the JSON that `Worker.runReplayHistories` and the Temporal CLI read
 * (enums and payloads as Temporal's JSON has them), indented for review.
 */
export function historyFileText(history: Parameters<typeof historyToJSON>[0]): string {
  return `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`;
}

/**
 * A client connection whose calls never reach its channel once it is closed. The SDK's gRPC retry interceptor
 * schedules a retry on a plain timer that nothing cancels; a call still retrying when the connection closes
 * (one its caller stopped waiting for) otherwise fires into the closed channel and throws "Channel has been
 * shut down" from the timer, an uncaught exception that ends the process. After close, such a retry ends as
 * CANCELLED instead. `retryAttempts`: the retry interceptor's attempts (default the SDK's).
 */
export async function connectClient(options: ConnectionOptions & { lazy?: boolean; retryAttempts?: number } = {}): Promise<Connection> {
  const { lazy, retryAttempts, ...connectionOptions } = options;
  let closed = false;
  const retry = makeGrpcRetryInterceptor(defaultGrpcRetryOptions(retryAttempts === undefined ? {} : { maxAttempts: retryAttempts }));
  const guard: grpc.Interceptor = (callOptions, nextCall) => new grpc.InterceptingCall(closed ? cancelledCall() : nextCall(callOptions));
  const withGuard = { ...connectionOptions, interceptors: [retry, ...(connectionOptions.interceptors ?? []), guard] };
  const connection = lazy ? Connection.lazy(withGuard) : await Connection.connect(withGuard);
  const close = connection.close.bind(connection);
  connection.close = async () => {
    closed = true;
    await close();
  };
  return connection;
}

/** A call that ends at once, CANCELLED, without a channel: what a retry gets once its connection is closed. */
type NextCall = ConstructorParameters<typeof grpc.InterceptingCall>[0];
function cancelledCall(): NextCall {
  const metadata = new grpc.Metadata();
  return {
    start: (_metadata: grpc.Metadata, listener: { onReceiveStatus: (status: grpc.StatusObject) => void }) =>
      listener.onReceiveStatus({ code: grpc.status.CANCELLED, details: 'the connection was closed', metadata }),
    cancelWithStatus: () => undefined,
    getPeer: () => 'closed',
    sendMessageWithContext: () => undefined,
    sendMessage: () => undefined,
    startRead: () => undefined,
    halfClose: () => undefined,
    setCredentials: () => undefined,
  } as unknown as NextCall;
}
