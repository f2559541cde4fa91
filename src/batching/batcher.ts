import { fingerprintOf } from '../starter/delivery-start';
import type { Delivery, DeliveryInput } from '../delivery/types';
import { InvalidInputError, type Problem } from '../errors';
import { batchBounds, batchContents, type BatchBounds, type BatchHandle, type PlannedBatch } from './batches';
import { storedBytes } from '../validation/limits';
import { parseDuration } from '../policy/duration';
import { Bulkhead } from '../concurrency/pool';

/** A batch's cost is a workflow: a linger of 100 ms keeps a busy tenant's batcher to about 10 starts a second. */
export const DEFAULT_LINGER_MS = 100;

/** The longest a Node timer waits (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface BatcherOptions {
  /** A batch goes once it has this many messages. Default 500, at most 1,000. */
  maxMessages?: number;
  /** … or this many bytes of deliveries as stored. Default and at most 1 MiB (docs/batches.md says why). */
  maxBytes?: number;
  /** … or once its first message has waited this long: ms or a duration string. Default 100 ms: each batch costs a workflow, so one batcher starts at most about 10 a second per tenant however fast messages come. */
  linger?: number | string;
  /** Batches being started at once; more wait their turn. Default 8. */
  maxInFlight?: number;
}

/** Where a message went: its delivery id, and the batch that accepted it. */
export interface BatchReceipt {
  deliveryId: string;
  batchId: string;
  /** Whether the batch was started by this batcher (false: a batch with the same messages existed). */
  created: boolean;
}

/** A batcher's options, checked and with their defaults; throws naming every wrong one at once (`field` goes before each name). */
export function batcherSettings(options: BatcherOptions, field = ''): { bounds: BatchBounds; lingerMs: number; maxInFlight: number } {
  const problems: Problem[] = [];
  let bounds: BatchBounds | undefined;
  try {
    bounds = batchBounds(options, field);
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    problems.push(...err.problems);
  }
  const lingerMs = parseDuration(options.linger ?? DEFAULT_LINGER_MS) ?? -1;
  // past a timer's limit Node fires at once: a longer linger would not linger at all
  if (!(lingerMs >= 0 && lingerMs <= MAX_TIMER_MS))
    problems.push({ field: `${field}linger`, message: 'must be a duration from 0 to 24 days' });
  const maxInFlight = options.maxInFlight ?? 8;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1)
    problems.push({ field: `${field}maxInFlight`, message: 'must be a positive integer' });
  if (problems.length || !bounds) throw new InvalidInputError(problems, 'batcher options');
  return { bounds, lingerMs, maxInFlight };
}

interface Pending {
  delivery: Delivery;
  fingerprint: string;
  waiters: { resolve: (r: BatchReceipt) => void; reject: (err: unknown) => void }[];
}

/** What a batcher needs of Redeliver: validation, and the start of one planned batch. */
export interface BatcherHost {
  validate(input: DeliveryInput): Delivery;
  startBatch(batch: PlannedBatch): Promise<BatchHandle>;
}

/**
 * Collects submits of single messages into batches (Redeliver.batcher): each submit resolves once the batch
 * holding its message is durably accepted by Temporal, and rejects if that start failed (nothing of that batch
 * was accepted: submit again). Bad input rejects at once, naming the field.
 */
export class Batcher {
  private readonly bounds: BatchBounds;
  private readonly lingerMs: number;
  /** Batches being started now, at most maxInFlight; the others wait their turn. */
  private readonly starts: Bulkhead;
  private readonly pending = new Map<string, { items: Map<string, Pending>; bytes: number; timer: NodeJS.Timeout | null }>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly host: BatcherHost,
    options: BatcherOptions = {},
  ) {
    const settings = batcherSettings(options);
    ({ bounds: this.bounds, lingerMs: this.lingerMs } = settings);
    this.starts = new Bulkhead(settings.maxInFlight);
  }

  /** Queues one message; resolves once its batch is accepted. The same message submitted twice while pending is sent once. */
  submit(input: DeliveryInput): Promise<BatchReceipt> {
    if (this.closed) return Promise.reject(new Error('the batcher is closed'));
    let delivery: Delivery;
    try {
      delivery = this.host.validate(input);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => this.add(delivery, { resolve, reject }));
  }

  /** Sends every message pending now and waits until every batch started so far is accepted (or failed). */
  async flush(): Promise<void> {
    for (const tenant of [...this.pending.keys()]) this.send(tenant);
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Flushes, then refuses further submits. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private add(delivery: Delivery, waiter: Pending['waiters'][number]): void {
    const fingerprint = fingerprintOf(delivery);
    const size = storedBytes(delivery) + 1;
    let batch = this.batchOf(delivery.tenant);
    const same = batch.items.get(delivery.deliveryId);
    if (same) {
      if (same.fingerprint === fingerprint) same.waiters.push(waiter);
      else
        waiter.reject(
          new InvalidInputError(
            [{ field: 'messageId', message: `${delivery.messageId} is pending with a different message or target` }],
            'delivery',
          ),
        );
      return;
    }
    if (batch.items.size && batch.bytes + size > this.bounds.maxBytes) {
      this.send(delivery.tenant);
      batch = this.batchOf(delivery.tenant);
    }
    batch.items.set(delivery.deliveryId, { delivery, fingerprint, waiters: [waiter] });
    batch.bytes += size;
    if (batch.items.size >= this.bounds.maxMessages) this.send(delivery.tenant);
    else batch.timer ??= setTimeout(() => this.send(delivery.tenant), this.lingerMs);
  }

  private batchOf(tenant: string) {
    let batch = this.pending.get(tenant);
    if (!batch) this.pending.set(tenant, (batch = { items: new Map(), bytes: 0, timer: null }));
    return batch;
  }

  /** Starts the tenant's pending batch, in turn with the batches in flight. */
  private send(tenant: string): void {
    const batch = this.pending.get(tenant);
    if (!batch) return;
    this.pending.delete(tenant);
    if (batch.timer) clearTimeout(batch.timer);
    const items = [...batch.items.values()];
    const started = this.starts.run(async () => {
      try {
        // one tenant's messages, each once, within the bounds: already a batch, its id from its contents
        const contents = batchContents(
          tenant,
          items.map((i) => i.fingerprint),
        );
        const handle = await this.host.startBatch({ tenant, batchId: contents, contents, deliveries: items.map((i) => i.delivery) });
        for (const item of items) {
          for (const w of item.waiters)
            w.resolve({ deliveryId: item.delivery.deliveryId, batchId: handle.batchId, created: handle.created });
        }
      } catch (err) {
        for (const item of items) for (const w of item.waiters) w.reject(err);
      }
    });
    const tracked = started.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}
