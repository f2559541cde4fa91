import { Runtime, type InjectedSinks } from '@temporalio/worker';
import type { EndpointReporter } from './endpoint-reporter';
import { METRICS, type DeadLetterSinks } from '../endpoints/operational-events';

/**
 * The worker's end of the sink a delivery that ended a dead letter calls (tellDeadLetter):
 * counted in `redeliver_dead_letters_total{endpoint}` and reported, tallied, to its tenant's workflow, which
 * tells the operator URLs in aggregate. Not called on replay: a delivery's dead letter is told once.
 */
export function deadLetterSinks(reporter: EndpointReporter | null): InjectedSinks<DeadLetterSinks> {
  const counter = Runtime.instance().metricMeter.createCounter(
    METRICS.deadLetters,
    undefined,
    'deliveries that ended dead letters, by endpoint',
  );
  return {
    endpoints: {
      deadLettered: {
        fn(_info, endpoint, deliveryId, outcome, at, tenant) {
          counter.add(1, { endpoint });
          reporter?.deadLettered(endpoint, deliveryId, outcome, at, tenant);
        },
      },
    },
  };
}
