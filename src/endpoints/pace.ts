import type { EndpointPace, PaceState, PaceView } from './types';

/*
 * The recovery pace as an endpoint's workflow shows it (docs/endpoint-health.md, "Outages: holds and the recovery
 * pace"): each worker paces its own sends and reports its pace; the workflow keeps the latest of each and merges them.
 * Pure: the endpoint workflow imports it.
 */

/** The worse the higher: the merged pace takes the worst worker's state. */
const SEVERITY: Record<PaceState, number> = { healthy: 0, recovering: 1, failing: 2 };

/** The workers' paces merged (null when there is none): the worst state and its why, the windows, sends in flight and caps summed. */
export function mergePaces(workers: Record<string, PaceView>): EndpointPace | null {
  const views = Object.entries(workers).sort(([a], [b]) => a.localeCompare(b));
  if (views.length === 0) return null;
  const worst = views.reduce((w, v) => (SEVERITY[v[1].state] > SEVERITY[w[1].state] ? v : w))[1];
  const sum = (field: 'window' | 'inFlight' | 'cap') => views.reduce((n, [, v]) => n + v[field], 0);
  return {
    state: worst.state,
    window: sum('window'),
    inFlight: sum('inFlight'),
    cap: sum('cap'),
    why: worst.why,
    workers: Object.fromEntries(views),
  };
}

/** `pace: recovering — window 12 of 32 in flight (slow start: doubling while it succeeds)`; several workers' summed. */
export function paceInWords(pace: EndpointPace): string {
  const workers = Object.keys(pace.workers).length;
  const across = workers > 1 ? ` across ${workers} workers` : '';
  const window =
    pace.state === 'failing' ? `probes only, one at a time${across}` : `window ${pace.window} of ${pace.cap} in flight${across}`;
  return `pace: ${pace.state} — ${window} (${pace.why})`;
}
