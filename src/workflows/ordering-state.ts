import type { Outcome } from '../delivery/types';
import { refusal } from '../errors';
import type {
  ArrivalCheck,
  Blocked,
  EnqueueRequest,
  OrderingCarried,
  OrderingEntry as Entry,
  OrderingHead as Head,
  OrderingNotice,
  OrderingStatus,
  Place,
} from '../contract/ordering';

/*
 * An ordering key's queue (docs/ordering.md), without Temporal: the places its deliveries took, in submit
 * order; the head, the one delivery of the key that may be attempted; and the dead letter that stopped the
 * key, if one did. The sequencer workflow (orderingWorkflow) calls it from its handlers and sends the
 * notices it collects; unit-tested in test/unit/.
 */

/**
 * Places queued on one key at once, and the bytes they take: the queue travels whole through continue-as-new,
 * as one payload, which Temporal refuses over 2 MB (a delivery id is at most 427 bytes).
 */
export const MAX_QUEUED = 10_000;
export const MAX_QUEUED_BYTES = 1024 * 1024;
/** A head whose delivery has not said it started this long after it became the head is looked up: it may never start. */
export const ARRIVAL_CHECK_MS = 30_000;
/** A head whose delivery cannot be found this long after its place was taken is dropped: its submit failed half-way. */
export const ARRIVAL_LIMIT_MS = 2 * 60_000;

/**
 * Dead letters stop the key: the endpoint lacks that message, and the ones behind it would arrive as if it had
 * come. An operator redrives it (it goes again, in its place) or releases the key. A QoS 0 message dropped does
 * not stop it (its producer chose at most once), nor does a cancelled one (someone chose that it not be sent).
 */
export function stopsKey(outcome: Outcome): boolean {
  return outcome === 'rejected' || outcome === 'expired' || outcome === 'exhausted';
}

const bytesOf = (entry: Entry) => JSON.stringify(entry).length + 1;

export class OrderingQueue {
  private readonly run: number;
  private enqueued: number;
  private passed: number;
  private head: Head | null;
  private readonly queue: Entry[];
  private readonly indexOf = new Map<string, Entry>();
  private bytes = 0;
  private blocked: Blocked | null;
  private readonly notices: Map<string, OrderingNotice>;

  constructor(
    readonly tenant: string,
    readonly key: string,
    carried?: OrderingCarried,
  ) {
    this.run = carried?.run ?? 1;
    this.enqueued = carried?.enqueued ?? 0;
    this.passed = carried?.passed ?? 0;
    this.head = carried?.head ?? null;
    this.queue = [...(carried?.queue ?? [])];
    for (const e of this.queue) this.track(e);
    this.blocked = carried?.blocked ?? null;
    this.notices = new Map(carried?.notices ?? []);
  }

  // the updates' validators: a refusal reaches the caller, and nothing changes

  checkEnqueue(requests: EnqueueRequest[], now: number): void {
    const seq = this.enqueued;
    let fresh = 0;
    let bytes = 0;
    for (const { deliveryIds, via, redrive } of requests) {
      for (const deliveryId of deliveryIds) {
        if (this.holds(deliveryId) || (redrive && this.blocked?.deliveryId === deliveryId)) continue;
        fresh++;
        bytes += bytesOf({ deliveryId, seq, arrived: false, at: now, ...(via && { via }) });
      }
    }
    if (this.queue.length + fresh > MAX_QUEUED || this.bytes + bytes > MAX_QUEUED_BYTES) {
      const message = `${this.key} has ${this.queue.length} deliveries queued, and a key holds at most ${MAX_QUEUED} (or ${MAX_QUEUED_BYTES} bytes of their ids): submit these again once some have gone`;
      throw refusal('KeyFull', message);
    }
  }

  checkRelease(deliveryId: string): void {
    if (this.blocked?.deliveryId === deliveryId || this.head?.deliveryId === deliveryId) return;
    const now = this.blocked
      ? `it is stopped by ${this.blocked.deliveryId}`
      : this.head
        ? `its head is ${this.head.deliveryId}`
        : 'it is idle';
    throw refusal('NotBlocked', `${deliveryId} does not hold the key ${this.key} (${now})`);
  }

  // what happens to the key

  /** Takes a place for each delivery not holding one, in order; where each one is. */
  enqueue(request: EnqueueRequest, now: number): Place[] {
    const existing = new Set(request.deliveryIds.filter((id) => this.holds(id)));
    for (const deliveryId of request.deliveryIds) {
      if (existing.has(deliveryId) || this.holds(deliveryId)) continue;
      const seq = ++this.enqueued;
      if (request.redrive && this.blocked?.deliveryId === deliveryId && !this.head) this.redriveHead(deliveryId, seq, now);
      else this.append({ deliveryId, seq, arrived: false, at: now, ...(request.via && { via: request.via }) });
    }
    this.promote(now);
    return request.deliveryIds.map((deliveryId) => ({ ...this.placeOf(deliveryId), existing: existing.has(deliveryId) }));
  }

  /**
   * A delivery has started: its turn, or a notice of what it waits for unless it shows that already (`shown`: what it
   * was told at its start; undefined: nothing). False when it held no place (it takes one at the end).
   */
  arrived(deliveryId: string, now: number, shown?: string | null): boolean {
    const known = this.holds(deliveryId);
    if (!known) {
      this.append({ deliveryId, seq: ++this.enqueued, arrived: true, at: now });
      this.promote(now);
    }
    const entry = this.head?.deliveryId === deliveryId ? this.head : this.indexOf.get(deliveryId);
    if (entry) entry.arrived = true;
    this.admitHead();
    this.noticeTo(deliveryId, shown);
    return known;
  }

  /** A delivery has ended: the head passes (or stops the key), a place further back is taken out (cancelled while queued). */
  left(deliveryId: string, outcome: Outcome, now: number): void {
    if (this.head?.deliveryId === deliveryId) {
      this.head = null;
      this.passed++;
      if (stopsKey(outcome)) {
        this.blocked = { deliveryId, outcome, at: now };
        this.noticeTo(this.queue[0]?.deliveryId);
      }
      this.promote(now);
    } else if (this.indexOf.has(deliveryId)) {
      this.passed++;
      this.remove(deliveryId);
    }
  }

  /** A place taken for a delivery that already existed and has ended (a resubmit): given back unless its delivery has started. */
  withdraw(deliveryId: string, now: number): void {
    if (this.head?.deliveryId === deliveryId && !this.head.arrived) this.dropHead(now);
    else if (this.indexOf.get(deliveryId)?.arrived === false) this.remove(deliveryId);
  }

  /** A notice could not reach its delivery: it has ended without a word (terminated), and its place goes. */
  gone(deliveryId: string, now: number): void {
    this.left(deliveryId, 'cancelled', now);
  }

  /** Past the dead letter that stopped the key, or past a head an operator found ended without a word. */
  release(deliveryId: string, now: number): OrderingStatus {
    if (this.blocked?.deliveryId === deliveryId) this.blocked = null;
    else if (this.head?.deliveryId === deliveryId) {
      this.head = null;
      this.passed++;
    }
    this.promote(now);
    return this.status();
  }

  // a head whose delivery does not start

  /** The head whose delivery has not arrived, and how long until it is looked up; null when there is none. */
  arrivalCheck(now: number): { deliveryId: string; via?: string; inMs: number } | null {
    const h = this.head;
    if (!h || h.arrived) return null;
    return { deliveryId: h.deliveryId, ...(h.via && { via: h.via }), inMs: Math.max(0, h.checkAt - now) };
  }

  /**
   * What the lookup found: running (whoever started it died before saying so), its turn; still coming (its batch
   * runs), look again later; ended, or missing for too long (its submit failed half-way), the place goes.
   */
  checked(deliveryId: string, found: ArrivalCheck, now: number): void {
    const h = this.head;
    if (!h || h.deliveryId !== deliveryId || h.arrived) return;
    const missingTooLong = found === 'missing' && now - h.at >= ARRIVAL_LIMIT_MS;
    if (found === 'running') this.arrived(deliveryId, now);
    else if (found === 'closed' || missingTooLong) this.dropHead(now);
    else h.checkAt = now + ARRIVAL_CHECK_MS;
  }

  // for the workflow

  /** The notices to send, each delivery's latest; taken, so each goes once. */
  takeNotices(): [string, OrderingNotice][] {
    const notices = [...this.notices];
    this.notices.clear();
    return notices;
  }

  get hasNotices(): boolean {
    return this.notices.size > 0;
  }

  idle(): boolean {
    return !this.head && !this.blocked && this.queue.length === 0 && this.notices.size === 0;
  }

  carried(): OrderingCarried {
    const { enqueued, passed, head, blocked } = this;
    return { run: this.run + 1, enqueued, passed, head, queue: [...this.queue], blocked, notices: [...this.notices] };
  }

  status(limit = 100): OrderingStatus {
    const { head, blocked } = this;
    const state = blocked ? 'blocked' : head ? (head.arrived ? 'delivering' : 'starting') : 'idle';
    return {
      tenant: this.tenant,
      key: this.key,
      state,
      head: head && { deliveryId: head.deliveryId, admitted: head.admitted },
      blocked: blocked && { deliveryId: blocked.deliveryId, outcome: blocked.outcome, at: new Date(blocked.at).toISOString() },
      queued: this.queue.length,
      queue: this.queue.slice(0, Math.max(0, limit)).map((e) => ({ deliveryId: e.deliveryId, started: e.arrived })),
      enqueued: this.enqueued,
      passed: this.passed,
      run: this.run,
      summary: this.summary(state),
    };
  }

  private summary(state: OrderingStatus['state']): string {
    const behind = this.queue.length ? `; ${this.queue.length} queued behind it` : '';
    if (state === 'blocked') {
      const b = this.blocked!;
      return `stopped by the dead letter ${b.deliveryId} (${b.outcome}): redrive it, or release the key${behind}`;
    }
    if (state === 'delivering') return `delivering ${this.head!.deliveryId}${behind}`;
    if (state === 'starting') return `waiting for ${this.head!.deliveryId} to start${behind}`;
    return 'idle: nothing queued';
  }

  /** Where an entry is in the queue: a binary search, the queue being in `seq` order. */
  private position(entry: Entry): number {
    let lo = 0;
    let hi = this.queue.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const seq = this.queue[mid]!.seq;
      if (seq === entry.seq) return mid;
      if (seq < entry.seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  private holds(deliveryId: string): boolean {
    return this.head?.deliveryId === deliveryId || this.indexOf.has(deliveryId);
  }

  private append(entry: Entry): void {
    this.queue.push(entry);
    this.track(entry);
  }

  private track(entry: Entry): void {
    this.indexOf.set(entry.deliveryId, entry);
    this.bytes += bytesOf(entry);
  }

  /** Takes a place out of the queue; the one after it now waits for the one before it. */
  private remove(deliveryId: string): void {
    const entry = this.indexOf.get(deliveryId)!;
    const i = this.position(entry);
    this.queue.splice(i, 1);
    this.indexOf.delete(deliveryId);
    this.bytes -= bytesOf(entry);
    this.noticeTo(this.queue[i]?.deliveryId);
  }

  private redriveHead(deliveryId: string, seq: number, now: number): void {
    this.head = { deliveryId, seq, arrived: false, at: now, admitted: false, checkAt: now + ARRIVAL_CHECK_MS, restores: this.blocked! };
    this.blocked = null;
    this.noticeTo(this.queue[0]?.deliveryId);
  }

  private dropHead(now: number): void {
    const restores = this.head?.restores;
    this.head = null;
    if (restores) {
      this.blocked = restores;
      this.noticeTo(this.queue[0]?.deliveryId);
    }
    this.promote(now);
  }

  /** The next place becomes the head when the key is free; admitted at once if its delivery has started. */
  private promote(now: number): void {
    if (this.head || this.blocked) return;
    const next = this.queue.shift();
    if (!next) return;
    this.indexOf.delete(next.deliveryId);
    this.bytes -= bytesOf(next);
    this.head = { ...next, admitted: false, checkAt: now + ARRIVAL_CHECK_MS };
    this.admitHead();
  }

  private admitHead(): void {
    const h = this.head;
    if (!h || !h.arrived || h.admitted) return;
    h.admitted = true;
    this.notices.set(h.deliveryId, { admit: true });
  }

  /** What a queued delivery waits for, told to it (once it has started: before, it cannot be told) unless it shows that. */
  private noticeTo(deliveryId: string | undefined, shown?: string | null): void {
    const entry = deliveryId === undefined ? undefined : this.indexOf.get(deliveryId);
    if (!entry?.arrived) return;
    const i = this.position(entry);
    const first = i === 0;
    const behind = first ? (this.head?.deliveryId ?? this.blocked?.deliveryId ?? null) : this.queue[i - 1]!.deliveryId;
    const blockedBy = first && !this.head && this.blocked ? { deliveryId: this.blocked.deliveryId, outcome: this.blocked.outcome } : null;
    if (shown === behind && !blockedBy) return;
    this.notices.set(entry.deliveryId, { admit: false, behind, blockedBy });
  }

  private placeOf(deliveryId: string): Omit<Place, 'existing'> {
    if (this.head?.deliveryId === deliveryId) return { deliveryId, position: 0, behind: null };
    const i = this.position(this.indexOf.get(deliveryId)!);
    return {
      deliveryId,
      position: i + 1,
      behind: i === 0 ? (this.head?.deliveryId ?? this.blocked?.deliveryId ?? null) : this.queue[i - 1]!.deliveryId,
    };
  }
}
