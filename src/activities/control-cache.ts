import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { endpointWorkflowId } from '../delivery/ids';
import { CONTROL_MEMO, type EndpointControl } from '../endpoints/controls';

/** How long a worker uses what it read of an endpoint's control before it reads it again. */
export const CONTROL_TTL_MS = 2_000;
/** How long the first read may take before the worker goes on with the defaults (Temporal slow or away). */
const READ_DEADLINE_MS = 5_000;

interface Entry {
  control: EndpointControl | undefined;
  readAt: number;
  /** A read has ended (well or not): attempts no longer wait for one. */
  known: boolean;
  reading?: Promise<void>;
}

/**
 * A worker's copy of each endpoint's control (its own limits), read from the memo of the endpoint's workflow
 * (DescribeWorkflowExecution: the server answers from its store, the workflow is not asked, so however many
 * workers read, a busy endpoint workflow does not get busier). Attempts wait only for the first read of
 * their endpoint: after that they take what is known and a read in the background brings it up to date
 * every CONTROL_TTL_MS, so a change reaches every worker within a few seconds. An endpoint without a
 * workflow has no control: the defaults apply; a read that fails keeps what was known.
 */
export class ControlCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly ttlMs = CONTROL_TTL_MS,
  ) {}

  async get(endpoint: string): Promise<EndpointControl | undefined> {
    let entry = this.entries.get(endpoint);
    if (!entry) {
      entry = { control: undefined, readAt: 0, known: false };
      this.entries.set(endpoint, entry);
    }
    if (!entry.known) await this.read(endpoint, entry);
    else if (Date.now() - entry.readAt > this.ttlMs) void this.read(endpoint, entry);
    return entry.control;
  }

  /** Reads the endpoint's control now (a test that changed it does not wait for the next round). */
  refresh(endpoint: string): Promise<void> {
    const entry = this.entries.get(endpoint);
    return entry ? this.read(endpoint, entry, true) : Promise.resolve();
  }

  private read(endpoint: string, entry: Entry, again = false): Promise<void> {
    if (entry.reading && !again) return entry.reading;
    entry.readAt = Date.now();
    const reading = this.client
      .withDeadline(Date.now() + READ_DEADLINE_MS, () =>
        this.client.workflow.getHandle(endpointWorkflowId(endpoint, this.taskQueue)).describe(),
      )
      .then(
        (described) => void (entry.control = described.memo?.[CONTROL_MEMO] as EndpointControl | undefined),
        (err: unknown) => {
          // no workflow yet: no control of its own; anything else: keep what was known
          if (err instanceof WorkflowNotFoundError) entry.control = undefined;
        },
      )
      .finally(() => {
        entry.known = true;
        if (entry.reading === reading) entry.reading = undefined;
      });
    entry.reading = reading;
    return reading;
  }
}
