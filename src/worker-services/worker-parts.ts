import type { Worker } from '@temporalio/worker';
import type { ControlCache } from './control-cache';
import type { EndpointReporter } from './endpoint-reporter';
import type { EndpointAdmission } from './admission';
import type { Pacer } from './pacer';
import type { MqttPool } from '../transports/mqtt';

/**
 * What createWorker built around a worker. runWorker closes it once the worker stops; tests look inside
 * (the MQTT pool's stats, the endpoint reporter's share of the budget). Not part of the package's API.
 */
export interface WorkerParts {
  mqtt: MqttPool;
  reporter: EndpointReporter | null;
  /** What the worker knows of each endpoint's control, and the limits it applies; null when it applies none. */
  controls: ControlCache | null;
  admission: EndpointAdmission | null;
  /** The recovery pace of outage holds, per endpoint (docs/endpoint-health.md, "Outages: holds and the recovery pace"). */
  pacer: Pacer;
  /** Closes what createWorker opened: the reporter (after a last report), the connection it made, the pools, tracing. */
  close(): Promise<void>;
}

const PARTS = new WeakMap<Worker, WorkerParts>();

export function registerParts(worker: Worker, parts: WorkerParts): void {
  PARTS.set(worker, parts);
}

/** The parts of a worker createWorker made; undefined for any other worker. */
export function partsOf(worker: Worker): WorkerParts | undefined {
  return PARTS.get(worker);
}
