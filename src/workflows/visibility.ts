import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { log, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';

/**
 * What a workflow's state shows outside it. The state classes call these instead of Temporal's functions, so
 * that unit tests (test/unit/) run them without a worker and check what they would have done.
 */
export interface WorkflowEffects {
  /** The UI's current details: not a command, not compared on replay. */
  details(words: string): void;
  /** Search attributes of the UI's list: a command, so when it happens is part of the history. */
  upsert(pairs: SearchAttributeUpdatePair[]): void;
  /** A line in the worker's log (not repeated on replay). */
  warn(message: string): void;
}

/** The effects inside a workflow: Temporal's own. */
export const temporalEffects: WorkflowEffects = {
  details: (words) => setCurrentDetails(words),
  upsert: (pairs) => upsertSearchAttributes(pairs),
  warn: (message) => log.warn(message),
};

/** A workflow's state name and the sentence that says what it is doing, which is also its current details in the UI. */
export class Shown<S extends string> {
  summary = 'starting';

  constructor(
    public state: S,
    private readonly effects: Pick<WorkflowEffects, 'details'>,
  ) {}

  describe(words: string): void {
    this.summary = words;
    this.effects.details(words);
  }

  /** Moves to `state` with its sentence; whether the state changed (what decides a search attribute update). */
  enter(state: S, words: string): boolean {
    const changed = state !== this.state;
    this.state = state;
    this.describe(words);
    return changed;
  }
}
