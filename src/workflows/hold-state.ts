import { ApplicationFailure } from '@temporalio/common';
import {
  type DueAnswer,
  type DueCursor,
  type DuePage,
  HOLD_FULL,
  HOLD_MAX_BYTES,
  HOLD_MAX_MESSAGES,
  type HeldEnd,
  type HeldMessage,
  type HeldView,
  type HoldAnswer,
  type HoldCarried,
  type HoldInput,
  type HoldReport,
  type HoldSummary,
} from '../contract';
import { logAttempt } from '../delivery/after-failure';
import { expiresAt } from '../delivery/summary';
import { rankOf } from '../endpoints/priority';

/*
 * What an outage hold keeps (docs/endpoint-health.md, "Outages"), apart from Temporal: the messages waiting for
 * their endpoint, how the others left, and how much it took in. Pure, so that it is tested without a server.
 */

/** The first waiting messages a summary names (the rest are counted). */
const SUMMARY_FIRST = 20;

export class HoldState {
  readonly waiting = new Map<string, HeldMessage>();
  /** Messages an operator's control is taking out: no page of the release names them any more. */
  private readonly leaving = new Set<string>();
  readonly left: Record<string, HeldEnd>;
  private received: number;
  private bytes: number;
  sealed: boolean;
  /** Epoch ms of the last intake (or the start): the hold completes once idle this long and empty. */
  lastIntakeAt: number;

  constructor(
    readonly input: HoldInput,
    readonly holdId: string,
    private readonly now: () => number,
  ) {
    const carried = input.carried;
    for (const m of carried?.waiting ?? []) this.waiting.set(m.delivery.deliveryId, m);
    this.left = { ...carried?.left };
    this.received = carried?.received ?? 0;
    this.bytes = carried?.bytes ?? 0;
    this.sealed = carried?.sealed ?? false;
    this.lastIntakeAt = now();
  }

  /** The hold update's validator: refuses (HOLD_FULL) what does not fit, so that the batch tries the next generation. */
  check(messages: readonly HeldMessage[]): void {
    if (!Array.isArray(messages)) throw new TypeError('hold: expected an array of held messages');
    const fresh = messages.filter((m) => !this.knows(m.delivery.deliveryId));
    if (fresh.length === 0) return;
    if (this.sealed) throw full(`${this.holdId} is sealed`);
    if (this.received + fresh.length > HOLD_MAX_MESSAGES || this.bytes + sizeOf(fresh) > HOLD_MAX_BYTES)
      throw full(`${this.holdId} has room for no more than ${HOLD_MAX_MESSAGES} messages or ${HOLD_MAX_BYTES} bytes`);
  }

  /** Takes the messages in; those it already has, or had, are not taken twice (a batch's activity run again). */
  take(messages: readonly HeldMessage[]): HoldAnswer {
    const fresh = messages.filter((m) => !this.knows(m.delivery.deliveryId));
    for (const m of fresh) this.waiting.set(m.delivery.deliveryId, m);
    this.received += fresh.length;
    this.bytes += sizeOf(fresh);
    if (fresh.length) this.lastIntakeAt = this.now();
    return { held: fresh.length, already: messages.length - fresh.length };
  }

  /** The next messages to send after the page's cursor, most urgent first (kind, then expiry, then age). */
  due(page: DuePage): DueAnswer {
    const after = page.after;
    const ordered = [...this.waiting.values()]
      .filter((m) => !this.leaving.has(m.delivery.deliveryId))
      .map((m) => ({ m, key: cursorOf(m) }))
      .filter((e) => after === null || compare(e.key, after) > 0);
    ordered.sort((a, b) => compare(a.key, b.key));
    const messages = ordered.slice(0, Math.max(1, page.limit));
    const last = messages.at(-1);
    return { messages: messages.map((e) => e.m), next: last && ordered.length > messages.length ? last.key : null };
  }

  /** What the release activity did: attempts recorded, messages that left removed. Reports on messages gone are void. */
  report(reports: readonly HoldReport[]): void {
    for (const r of reports) {
      const m = this.waiting.get(r.deliveryId);
      if (!m) continue;
      if (r.attempt) this.recordAttempt(m, r);
      if (r.now !== 'waiting') this.leave(m, r.now);
    }
  }

  /** Takes one message out (an operator's control on it): null when it does not wait here. */
  takeOut(deliveryId: string): HeldMessage | null {
    const m = this.waiting.get(deliveryId) ?? null;
    if (m) this.leaving.add(deliveryId);
    return m;
  }

  /** A take-out that failed: the message is the release's again. */
  keep(deliveryId: string): void {
    this.leaving.delete(deliveryId);
  }

  /** A message left (delivered here, or handed over to its own delivery). */
  leave(m: HeldMessage, how: HeldEnd['left']): void {
    const id = m.delivery.deliveryId;
    this.waiting.delete(id);
    this.leaving.delete(id);
    const code = m.attemptLog.at(-1)?.code ?? m.lastError?.code ?? 'unsent';
    this.left[id] = { left: how, attempts: m.attempts, code, at: this.now(), kind: m.delivery.kind, qos: m.delivery.qos };
  }

  view(deliveryId: string): HeldView | null {
    const m = this.waiting.get(deliveryId);
    const left = this.left[deliveryId] ?? null;
    if (!m && !left) return null;
    if (!m) return { holdId: this.holdId, message: null, left, summary: `left ${this.holdId}: ${left!.left}` };
    const { delivery, ...rest } = m;
    const expiry = expiresAt(delivery, m.firstAttemptAt);
    const expires = expiry === null ? '' : `, expires ${new Date(expiry).toISOString()}`;
    const last = m.lastError ? `attempt ${m.attempts}: ${m.lastError.code}` : 'held unsent';
    return {
      holdId: this.holdId,
      message: { ...rest, deliveryId: delivery.deliveryId, messageId: delivery.messageId, kind: delivery.kind, qos: delivery.qos },
      left: null,
      summary: `waiting in ${this.holdId} for ${this.input.endpoint} to answer again (${last}${expires})`,
    };
  }

  summary(): HoldSummary {
    const waiting = [...this.waiting.values()];
    // each message's place is computed once, not per comparison: the hold shows this at every update and report
    const first = waiting
      .map((m) => ({ m, key: cursorOf(m) }))
      .sort((a, b) => compare(a.key, b.key))
      .slice(0, SUMMARY_FIRST)
      .map((e) => e.m);
    return {
      tenant: this.input.tenant,
      endpoint: this.input.endpoint,
      generation: this.input.generation,
      waiting: this.waiting.size,
      received: this.received,
      sealed: this.sealed,
      oldestHeldAt: waiting.length ? Math.min(...waiting.map((m) => m.heldAt)) : null,
      first: first.map((m) => ({ deliveryId: m.delivery.deliveryId, expiresAt: expiresAt(m.delivery, m.firstAttemptAt) })),
    };
  }

  /** The UI's details of the hold: how many wait, since when, and the first of them with until when. */
  details(): string {
    const s = this.summary();
    const lines = [
      `**${s.waiting}** messages wait for **${s.endpoint}** to answer again (${s.received} held in all${s.sealed ? ', sealed' : ''})`,
      ...s.first.map((f) => `- ${f.deliveryId} — until ${f.expiresAt === null ? 'it is delivered' : new Date(f.expiresAt).toISOString()}`),
      ...(s.waiting > s.first.length
        ? [`- … and ${s.waiting - s.first.length} more (query \`summary\`, or \`redeliver status <id>\`)`]
        : []),
    ];
    return lines.join('\n');
  }

  carried(): HoldCarried {
    return { waiting: [...this.waiting.values()], left: this.left, received: this.received, bytes: this.bytes, sealed: this.sealed };
  }

  private knows(deliveryId: string): boolean {
    return this.waiting.has(deliveryId) || deliveryId in this.left;
  }

  private recordAttempt(m: HeldMessage, r: HoldReport): void {
    const a = r.attempt!;
    if (a.attempt <= m.attempts) return; // a signal the release sent again (it did not hear it was taken): counted once
    const startedAt = Date.parse(a.startedAt);
    m.attempts = a.attempt;
    m.lastAttemptAt = startedAt + a.durationMs;
    m.attemptLog = logAttempt(m.attemptLog, { ...a, startedAt, ...(a.answer !== undefined && { reason: a.answer }) });
    if (r.error) m.lastError = r.error;
  }
}

/** The validator's refusal: the hold is full or sealed (HOLD_FULL), the batch goes to the next generation. */
function full(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: HOLD_FULL, message, nonRetryable: true });
}

function sizeOf(messages: readonly HeldMessage[]): number {
  return messages.reduce((n, m) => n + JSON.stringify(m).length, 0);
}

/** Deadline-first within a hold: command responses, then events, then telemetry; then the closest expiry, the oldest. */
function cursorOf(m: HeldMessage): DueCursor {
  return [rankOf(m.delivery.kind, undefined), expiresAt(m.delivery, m.firstAttemptAt), m.firstAttemptAt, m.delivery.deliveryId];
}

function compare(a: DueCursor, b: DueCursor): number {
  if (a[0] !== b[0]) return a[0] - b[0];
  const ea = a[1] ?? Infinity;
  const eb = b[1] ?? Infinity;
  if (ea !== eb) return ea - eb;
  if (a[2] !== b[2]) return a[2] - b[2];
  return a[3] < b[3] ? -1 : a[3] > b[3] ? 1 : 0;
}
