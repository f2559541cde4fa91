import type { Dispatcher } from 'undici';
import { createDeliverActivities } from './deliver';

export type { AttemptSuccess, AttemptFailureDetails } from './deliver';

export interface ActivityDeps {
  /** The HTTP connection pool (see transports/http.ts). */
  http: Dispatcher;
}

/** Every activity the worker registers, configured from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  return { ...createDeliverActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
