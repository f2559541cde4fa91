import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, Worker, type ReplayResult } from '@temporalio/worker';
import { quietRuntime } from '../support/temporal';

const DIR = path.join(__dirname, '..', 'histories');
const histories = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((file) => ({ workflowId: file, history: JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as unknown }));

async function replayAll(workflowBundle: { codePath: string } | { code: string }): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories({ workflowBundle }, histories)) results.push(result);
  return results;
}

beforeAll(() => quietRuntime());

test('every recorded history replays on the current workflow code', async () => {
  // a fixture for every path a delivery can take: with retries as activity retries (now), and as they were
  // recorded before, a timer and an activity per retry (deliveries in flight when the worker was upgraded)
  const paths = [
    'delivered-at-once',
    'delivered-after-retries',
    'delivered-after-retry-after',
    'rejected',
    'dropped',
    'exhausted',
    'expired',
    'cancelled',
    'retry-now',
    'paused-resumed',
    'continued-as-new-first-run',
    'continued-as-new-last-run',
  ];
  for (const path of paths) {
    expect(histories.map((h) => h.workflowId)).toContain(`deliveryWorkflow_${path}.json`);
    expect(histories.map((h) => h.workflowId)).toContain(`deliveryWorkflow_timers-${path}.json`);
  }
  // the controls as recorded before they answered with the retrying activity's own count (true-attempt-counts)
  for (const path of ['cancelled', 'retry-now', 'paused-resumed']) {
    expect(histories.map((h) => h.workflowId)).toContain(`deliveryWorkflow_stale-counts-${path}.json`);
  }
  // a cancel during an attempt that then delivered: the outcome stands (outcome-before-cancel)
  expect(histories.map((h) => h.workflowId)).toContain('deliveryWorkflow_cancel-during-delivered-attempt.json');
  expect(histories.map((h) => h.workflowId)).toContain('deliveryWorkflow_class-changed.json');
  // a first attempt the endpoint's limits held on the server, and one they ended unsent (endpoint-limits)
  expect(histories.map((h) => h.workflowId)).toContain('deliveryWorkflow_limits-held.json');
  expect(histories.map((h) => h.workflowId)).toContain('deliveryWorkflow_limits-unsent.json');
  expect(histories.map((h) => h.workflowId)).toContain('endpointWorkflow_settings.json');
  // the endpoint's breaker opening and closing, published in its memo (endpoint-breaker)
  expect(histories.map((h) => h.workflowId)).toContain('endpointWorkflow_breaker.json');
  expect(histories.map((h) => h.workflowId)).toContain('endpointWorkflow_reports.json');
  // an endpoint announcing its operational events: failing, recovered, dead letters, disabled (operational-events)
  expect(histories.map((h) => h.workflowId)).toContain('endpointWorkflow_events.json');
  // an endpoint failing by time alone after one attempt: before endpoint-wake-ahead (a 1 ms timer after another), and after it
  expect(histories.map((h) => h.workflowId)).toContain('endpointWorkflow_failing-by-time-spinning.json');
  expect(histories.map((h) => h.workflowId)).toContain('endpointWorkflow_failing-by-time.json');
  // a tenant's dead letters across its endpoints, one event per window (tenant-events)
  expect(histories.map((h) => h.workflowId)).toContain('tenantEventsWorkflow_dead-letters.json');
  // ordering keys (docs/ordering.md): deliveries queued behind one another, and their keys' sequencers
  for (const file of [
    'deliveryWorkflow_ordered-head',
    'deliveryWorkflow_ordered-queued',
    'deliveryWorkflow_ordered-behind-dead-letter',
    'orderingWorkflow_ordered',
    'orderingWorkflow_stopped-released',
    'orderingWorkflow_continued-first-run',
    'orderingWorkflow_continued-last-run',
  ]) {
    expect(histories.map((h) => h.workflowId)).toContain(`${file}.json`);
  }
  // batches (docs/batches.md): all delivered at once, some handed over to deliveries that start from the batch's
  // attempt (handed-over-first-attempt), an ordered message queued on its key; a delivery handed a single submit's
  // failed first attempt (a standalone activity, a batch of one)
  for (const file of [
    'batchWorkflow_delivered',
    'batchWorkflow_passed-through',
    'batchWorkflow_handed-over',
    'batchWorkflow_ordered',
    'deliveryWorkflow_batch-handed-over',
    'deliveryWorkflow_first-attempt-handed-over',
  ]) {
    expect(histories.map((h) => h.workflowId)).toContain(`${file}.json`);
  }
  // outage holds (docs/endpoint-health.md, "Outages"): a hold that took a batch's messages, released them and completed;
  // deliveries started from it: one that ended there (a dead letter), one taken out by a pause, carrying its attempt
  for (const file of ['holdWorkflow_released', 'deliveryWorkflow_hold-ended', 'deliveryWorkflow_hold-taken-out']) {
    expect(histories.map((h) => h.workflowId)).toContain(`${file}.json`);
  }
  // reports with what the endpoint's recording keeps (issue 21): arrivals, retries, ends, the budget
  expect(histories.map((h) => h.workflowId)).toContain('endpointWorkflow_recording.json');
  // MQTT: a delivery over MQTT (a command's response), refused and unknown-credential attempts, command subscriptions
  for (const file of [
    'deliveryWorkflow_mqtt-delivered',
    'deliveryWorkflow_timers-mqtt-delivered',
    'deliveryWorkflow_mqtt-dropped',
    'deliveryWorkflow_mqtt-rejected',
    'commandSubscriptionWorkflow_commands',
    'commandSubscriptionWorkflow_broker-away',
  ]) {
    expect(histories.map((h) => h.workflowId)).toContain(`${file}.json`);
  }
  const results = await replayAll({ codePath: process.env.REDELIVER_TEST_BUNDLE! });
  const failed = results.filter((r) => r.error).map((r) => `${r.workflowId}: ${String(r.error)}`);
  expect(failed).toEqual([]);
  expect(results).toHaveLength(histories.length);
});

test('the replayer catches a determinism break', async () => {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../fixtures/broken-workflows'),
    logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} },
  });
  const results = await replayAll({ code });
  expect(results.length).toBe(histories.length);
  for (const r of results) expect(r.error).toBeInstanceOf(DeterminismViolationError);
});
