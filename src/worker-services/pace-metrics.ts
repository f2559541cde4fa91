import { Runtime } from '@temporalio/worker';
import { METRICS, STATE_VALUES } from '../endpoints/operational-events';
import type { PaceView } from '../endpoints/types';

/**
 * The recovery pace as gauges on the worker's Prometheus endpoint (docs/endpoint-health.md, "Outages: holds and the
 * recovery pace"): per endpoint, this worker's window and its state. Set by the pacer at each change.
 */
export function paceGauges(): (endpoint: string, view: PaceView) => void {
  const meter = Runtime.instance().metricMeter;
  const window = meter.createGauge(METRICS.paceWindow, 'int', undefined, "this worker's recovery window: sends in flight allowed");
  const state = meter.createGauge(METRICS.paceState, 'int', undefined, "this worker's recovery pace: 0 healthy, 1 recovering, 2 failing");
  return (endpoint, view) => {
    window.set(view.window, { endpoint });
    state.set(STATE_VALUES[view.state], { endpoint });
  };
}
