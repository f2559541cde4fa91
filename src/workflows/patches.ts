/*
 * Every `patched()` id of the workflow code, what it guards, and the recorded histories (test/histories/) of each
 * side of it (CONTRIBUTING.md, "How to change the command sequence"). A new patch gets its id here, with the
 * fixtures of runs from before it (kept, never re-recorded: they are what production still has) and of runs
 * that took it; its call site imports the id from here. The registry's unit test checks both: every `patched()`
 * and `deprecatePatch()` in src names an id listed here, every "after" fixture carries the id's marker and no
 * "before" fixture does. An id's text is in histories already recorded: it never changes.
 */

/** Retries as Temporal activity retries (docs/retries.md); before it, a durable timer and an attempt activity per retry. */
export const SERVER_SIDE_RETRIES = 'server-side-retries';
/** A pause, retry now or cancel that finds the retrying activity running reads its progress and stops it, and answers with the attempts the endpoint saw. */
export const TRUE_ATTEMPT_COUNTS = 'true-attempt-counts';
/** A cancelled delivery whose attempt in flight ended it ends with that outcome (delivered, or a dead letter), not as cancelled. */
export const OUTCOME_BEFORE_CANCEL = 'outcome-before-cancel';
/** A delivery a batch started carries its first attempt instead of making it (docs/batches.md). */
export const HANDED_OVER_FIRST_ATTEMPT = 'handed-over-first-attempt';
/** An endpoint's workflow announces its operational events by an activity (docs/endpoint-health.md, "Operational events"). */
export const OPERATIONAL_EVENTS = 'operational-events';
/** An endpoint's workflow publishes its breaker in its memo when it opens, closes or changes its prober. */
export const ENDPOINT_BREAKER = 'endpoint-breaker';
/** An endpoint's loop waits only for changes still ahead, not a 1 ms timer after another once failing by time alone. */
export const ENDPOINT_WAKE_AHEAD = 'endpoint-wake-ahead';

export type PatchId =
  | typeof SERVER_SIDE_RETRIES
  | typeof TRUE_ATTEMPT_COUNTS
  | typeof OUTCOME_BEFORE_CANCEL
  | typeof HANDED_OVER_FIRST_ATTEMPT
  | typeof OPERATIONAL_EVENTS
  | typeof ENDPOINT_BREAKER
  | typeof ENDPOINT_WAKE_AHEAD;

/** Where a patch is asked, and the recorded histories of each side of it (file names in test/histories/). */
export interface PatchRecord {
  /** Where the workflow asks it: a run that never gets there records no marker. */
  askedWhere: string;
  /** Runs recorded before it, on the old path: none has its marker. Empty when no such run was recorded. */
  before: readonly string[];
  /** Runs that took it: each has its marker. */
  after: readonly string[];
}

const delivery = (...scenarios: string[]) => scenarios.map((s) => `deliveryWorkflow_${s}.json`);
const endpoint = (...scenarios: string[]) => scenarios.map((s) => `endpointWorkflow_${s}.json`);
/** The delivery paths with a retry, recorded on both sides of server-side-retries (the old ones as `timers-*`). */
const RETRYING_PATHS = [
  'delivered-after-retries',
  'delivered-after-retry-after',
  'exhausted',
  'expired',
  'cancelled',
  'retry-now',
  'paused-resumed',
  'continued-as-new-first-run',
  'continued-as-new-last-run',
];

export const PATCHES: Readonly<Record<PatchId, PatchRecord>> = {
  [SERVER_SIDE_RETRIES]: {
    // a delivery of the old code switches to the new path at its next failure, carrying its state (docs/retries.md)
    askedWhere: 'after each failed attempt that retries',
    before: delivery(...RETRYING_PATHS.map((p) => `timers-${p}`)),
    after: delivery(...RETRYING_PATHS, 'class-changed', 'ordered-head', 'batch-handed-over'),
  },
  [TRUE_ATTEMPT_COUNTS]: {
    askedWhere: 'at a pause, retry now or cancel that finds the retrying activity running',
    before: delivery('stale-counts-cancelled', 'stale-counts-retry-now', 'stale-counts-paused-resumed'),
    after: delivery('cancelled', 'retry-now', 'paused-resumed', 'cancel-during-delivered-attempt'),
  },
  [OUTCOME_BEFORE_CANCEL]: {
    askedWhere: 'when a cancel finds an attempt in flight that then ends the delivery',
    before: [],
    after: delivery('cancel-during-delivered-attempt'),
  },
  [HANDED_OVER_FIRST_ATTEMPT]: {
    // a worker from before batches ignores the first attempt and makes attempt 1 itself: no such run was recorded
    askedWhere: 'at the start of a delivery that carries a first attempt',
    before: [],
    after: delivery('batch-handed-over'),
  },
  [OPERATIONAL_EVENTS]: {
    askedWhere: 'when an endpoint has an event to announce',
    before: endpoint('breaker'),
    after: endpoint('events', 'failing-by-time-spinning', 'failing-by-time'),
  },
  [ENDPOINT_BREAKER]: {
    askedWhere: 'when the endpoint breaker opens, closes or changes its prober',
    before: [],
    after: endpoint('breaker'),
  },
  [ENDPOINT_WAKE_AHEAD]: {
    askedWhere: 'when the wait the old loop computed had already passed',
    before: endpoint('failing-by-time-spinning'),
    after: endpoint('failing-by-time'),
  },
};
