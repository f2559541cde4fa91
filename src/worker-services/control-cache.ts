import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { endpointWorkflowId } from '../contract';
import { CONTROL_MEMO, CONTROL_TTL_MS, type EndpointControl } from '../endpoints/controls';
/** How long a read an attempt waits for may take before it goes on with what was known (Temporal slow or away). */
const READ_DEADLINE_MS = 5_000;

/** An endpoint's control, or the read that will give it. */
export type MaybeRead = EndpointControl | undefined | Promise<EndpointControl | undefined>;

interface Entry {
  control: EndpointControl | undefined;
  readAt: number;
  /** A read has ended (well or not): attempts no longer wait for one. */
  known: boolean;
  reading?: Promise<void>;
}

/**
 * A worker's copy of each endpoint's control (its own limits, its mode), read from the memo of the endpoint's
 * workflow (DescribeWorkflowExecution: the server answers from its store, the workflow is not asked, so however
 * many workers read, a busy endpoint workflow does not get busier). A copy older than the time to live is read
 * again before an attempt uses it, so a pause, disable or enable applies to every attempt that starts more than
 * `ttlMs` after it returned, however long the endpoint was quiet (issue 31: a copy a minute old let an attempt go
 * 10 s after a pause). A busy endpoint's copy is read again in the background once it is half that old, so its
 * attempts seldom wait for a read. An endpoint without a workflow has no control: the defaults apply; a read
 * that fails keeps what was known.
 */
export class ControlCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly ttlMs = CONTROL_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The endpoint's control: at once from a copy within its time to live, else once it has been read. */
  get(endpoint: string): MaybeRead {
    let entry = this.entries.get(endpoint);
    if (!entry) {
      entry = { control: undefined, readAt: 0, known: false };
      this.entries.set(endpoint, entry);
    }
    const age = this.now() - entry.readAt;
    if (!entry.known || age > this.ttlMs) return this.read(endpoint, entry).then(() => entry.control);
    if (age > this.ttlMs / 2) void this.read(endpoint, entry);
    // no promise when none is needed: every attempt asks, and at volume each promise counts (issue 32)
    return entry.control;
  }

  /** Reads the endpoint's control now (a test that changed it does not wait for the next round). */
  refresh(endpoint: string): Promise<void> {
    const entry = this.entries.get(endpoint);
    return entry ? this.read(endpoint, entry, true) : Promise.resolve();
  }

  private read(endpoint: string, entry: Entry, again = false): Promise<void> {
    if (entry.reading && !again) return entry.reading;
    entry.readAt = this.now();
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
