import type { Delivery } from '../delivery/types';
import type { LimitsRefusal } from '../delivery/limits-verdict';
import { RATE, type EndpointAdmission } from './admission';

/** What the endpoint's limits say of an attempt about to go out (EndpointAdmission): it goes, or why not. */
export type LimitsPassed = { go: true; release: (durationMs: number) => void } | ({ go: false } & LimitsRefusal);

/** An attempt that comes back this close to its reserved slot takes it. */
const ON_TIME_MS = 50;

/**
 * Asks the endpoint's limits whether the attempt may go now (a short wait is taken in the activity). When
 * it may not, the activity waits on the server (WAITING_TYPE with `nextRetryDelay`: no history event) and
 * comes back at `at`, holding its reserved slot; with no room before the delivery expires, it ends now.
 */
export async function passLimits(
  admission: EndpointAdmission | null | undefined,
  delivery: Delivery,
  context: {
    reservedAt: number | null;
    expiry: number | null;
    now: number;
    /** When a held attempt comes back: the delivery's own backoff (heldUntil); null when not before it expires. */
    holdUntil: () => number | null;
    signal?: AbortSignal;
  },
): Promise<LimitsPassed> {
  if (!admission) return { go: true, release: () => undefined };
  // its time ran out before it came here (queued behind others, or held): it ends, spending no slot
  if (context.expiry !== null && context.now >= context.expiry) {
    const words = `${delivery.endpoint} had no room for it in time`;
    return { go: false, at: context.now, reservedAt: null, held: false, expired: true, disabled: false, words };
  }
  const reserved = context.reservedAt !== null && context.reservedAt - context.now <= ON_TIME_MS;
  const admitted = await admission.ask(delivery.endpoint, {
    reserved,
    ...(reserved && { reservedAt: context.reservedAt! }),
    kind: delivery.kind,
    ...(context.expiry !== null && { notAfter: context.expiry }),
    ...(context.signal && { signal: context.signal }),
  });
  if (admitted.go) return admitted;
  if ('refused' in admitted)
    return { go: false, at: Infinity, reservedAt: null, held: false, expired: false, disabled: true, words: admitted.why };
  if ('held' in admitted) {
    const at = context.holdUntil();
    return { go: false, at: at ?? Infinity, reservedAt: null, held: true, expired: at === null, disabled: false, words: admitted.why };
  }
  const limits = await admission.limits(delivery.endpoint);
  const bound = admitted.reason === RATE ? `${limits.rate}/s` : `${limits.maxInFlight} in flight`;
  return {
    go: false,
    at: admitted.at,
    reservedAt: admitted.reason === RATE ? admitted.at : null,
    held: false,
    disabled: false,
    expired: context.expiry !== null && admitted.at >= context.expiry,
    words: `${delivery.endpoint}'s limit of ${bound} holds the attempt back`,
  };
}
