import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { DEAD_LETTER_STATES, visibilityQuery, type DeadLetterState, type DeliveryFilter } from '../delivery/filter';
import { isEncryptedValue } from '../encryption/codec';
import { InvalidInputError } from '../errors';
import { listExecutionsPage } from '../temporal/sdk-adapter';
import { Attempts, DeliveryKind, DeliveryState, Device, Endpoint, LastErrorClass, Tenant } from '../contract';

/* Listings of deliveries: what the visibility store knows of them, all at once or a page at a time. */

/** Which page to read: at most `pageSize` items, after the page whose `nextCursor` this is. */
export interface PageRequest {
  pageSize: number;
  cursor?: string;
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
  /** A message of a batch without a delivery of its own (runId is then empty): the batch it came in. */
  batch?: { batchId: string; workflowId: string };
  /** Such a message that waited in an outage hold: the hold. */
  hold?: { holdId: string };
}

export interface ListOptions {
  /**
   * Also the messages of batches that have no delivery of their own (delivered at once, or waiting in or delivered
   * from an outage hold), merged in (docs/batches.md, "Finding a message by its id"); default true. Reads each
   * completed batch's result it comes to: false for a listing read again and again (watch).
   */
  batched?: boolean;
}

/** The deliveries of one task queue, as visibility lists them. */
export class DeliveryLists {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

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
  async executionsPage(query: string, page: PageRequest) {
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

  /** Dead letters (rejected, expired, exhausted, dropped) matching a filter. */
  deadLetters(
    filter: Omit<DeliveryFilter, 'state'> & { state?: DeadLetterState | DeadLetterState[] } = {},
  ): AsyncIterable<DeliverySummary> {
    return this.list({ ...filter, state: filter.state ?? [...DEAD_LETTER_STATES] });
  }
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
