import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { endpointsQuery, OPEN_STATES } from '../delivery/filter';
import type { OutageRecording } from '../endpoints/recording';
import type { TimelineBucket } from '../endpoints/timeline';
import type { EndpointDowntimeReport, EndpointStatus } from '../endpoints/types';
import { endpointDowntimeQuery, endpointRecordingQuery, endpointStatusQuery, endpointTimelineQuery, endpointWorkflowId } from '../contract';
import type { DeliveryLists, PageRequest } from './lists';

/* The endpoints deliveries go to, as their workflows see them (docs/endpoint-health.md). */

/** An endpoint as `redeliver endpoints` shows it: its workflow's status and the deliveries waiting on it. */
export interface EndpointView extends EndpointStatus {
  /** Deliveries to it not ended yet (pending, attempting, waiting, paused). */
  waiting: number;
}

/** A page of endpoints (`endpointsPage`). */
export interface EndpointPage {
  endpoints: EndpointView[];
  /** Pass it back for the next page; null when there is none. */
  nextCursor: string | null;
}

/** The endpoints of one task queue. */
export class EndpointViews {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly lists: DeliveryLists,
  ) {}

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
    const { executions, nextCursor } = await this.lists.executionsPage(endpointsQuery(this.taskQueue), page);
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
        const waiting = await this.lists.count({ endpoint: status.endpoint, state: [...OPEN_STATES] });
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
}
