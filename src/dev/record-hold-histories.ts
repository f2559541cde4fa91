/**
 * The recorded histories of an outage hold (`npm run record-histories` calls this; docs/endpoint-health.md, "Outages"),
 * all from one outage of an endpoint of their own: the hold that took a batch's messages while the endpoint failed,
 * released them once it answered again and completed when it had been empty and idle (holdWorkflow_released, about
 * a minute: HOLD_IDLE_MS); a held message whose max age passed meanwhile, whose delivery starts closed, a dead letter
 * (deliveryWorkflow_hold-ended); and a held message taken out by an operator's pause, delivered by its own delivery
 * carrying the attempts it made in the hold (deliveryWorkflow_hold-taken-out).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Redeliver } from '../client/index';
import { heldQuery, holdSummaryQuery, takeOutUpdate, type HoldWorkflow, type MessageResult } from '../contract';
import type { DeliveryInput } from '../delivery/types';
import { startFlakyEndpoint } from '../demo/flaky-endpoint';
import { historyFileText } from '../temporal/sdk-adapter';

export const HOLD_SCENARIOS = ['hold'] as const;

const FAST = { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' } as const;

export async function recordHoldHistories(redeliver: Redeliver, outDir: string, only: string[]): Promise<void> {
  if (only.length > 0 && !only.includes('hold')) return;
  // an endpoint of its own: the worker's recovery pacer learns that it fails apart from the other scenarios' endpoint
  const endpoint = await startFlakyEndpoint();
  const { client } = redeliver;
  const save = async (workflowId: string, file: string) => {
    writeFileSync(path.join(outDir, file), historyFileText(await client.workflow.getHandle(workflowId).fetchHistory()));
    return file;
  };
  const message = (id: string, extra: Partial<DeliveryInput> = {}): DeliveryInput => ({
    kind: 'event',
    tenant: 'fixtures',
    device: 'device-1',
    messageId: id,
    payload: { id },
    target: `${endpoint.url}/hold`,
    policy: FAST,
    ...extra,
  });
  const batch = async (batchId: string, inputs: DeliveryInput[]) =>
    (await (await redeliver.submitBatch(inputs, { batchId })).batches[0]!.result()).results;
  try {
    endpoint.setDown('/hold', true);
    // the outage begins: the first failures go on their own, the next wait in the hold with their failed attempt
    const outage = await batch(
      'hold-outage',
      [1, 2, 3, 4].map((n) => message(`hold-outage-${n}`)),
    );
    const takenOut = outage.find((r) => r.disposition === 'held' && r.code !== 'held');
    if (!takenOut) throw new Error(`no message held after its failed first attempt (${JSON.stringify(outage)}): record again`);
    // the endpoint is known to fail: the next batch's messages wait too
    const [released, ended] = (
      await batch('hold-released', [message('hold-released'), message('hold-ended', { policy: { ...FAST, maxAge: '3s' } })])
    ).map(heldIn);
    if (takenOut.hold !== released!.hold) throw new Error(`two holds (${takenOut.hold}, ${released!.hold}): record again`);
    const hold = client.workflow.getHandle<HoldWorkflow>(released!.hold!);

    // an operator pauses a held message: it leaves the hold for a delivery of its own, paused, with its attempt
    await hold.executeUpdate(takeOutUpdate, { args: [takenOut.deliveryId, { control: 'pause', reason: 'maintenance' }] });
    // the other's max age passes while the endpoint fails: it leaves the hold for a delivery that starts closed
    await until(async () => (await hold.query(heldQuery, ended!.deliveryId))?.left !== null);
    const deadLetter = await redeliver.getHandle(ended!.deliveryId).result();

    endpoint.setDown('/hold', false);
    await until(async () => (await hold.query(holdSummaryQuery)).waiting === 0);
    const own = redeliver.getHandle(takenOut.deliveryId);
    await own.resume();
    const delivered = await own.result();
    // empty, and nothing handed in for a minute: the hold completes
    const { left } = await hold.result();
    const files = [
      await save(hold.workflowId, 'holdWorkflow_released.json'),
      await save(ended!.deliveryId, 'deliveryWorkflow_hold-ended.json'),
      await save(takenOut.deliveryId, 'deliveryWorkflow_hold-taken-out.json'),
    ];
    const how = Object.values(left).map((l) => l.left);
    console.log(`hold: ${how.join(', ')}; ${deadLetter.outcome}; taken out ${delivered.outcome} → ${files.join(', ')}`);
  } finally {
    await endpoint.close();
  }
}

async function until(done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((res) => setTimeout(res, 200));
}

/** A message of the batch that must wait in a hold: the recording means nothing otherwise. */
function heldIn(row: MessageResult): MessageResult {
  if (row.disposition !== 'held') throw new Error(`${row.messageId} was not held (${row.disposition}, ${row.code}): record again`);
  return row;
}
