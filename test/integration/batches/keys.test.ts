/**
 * Batches and payload encryption: a worker with keys sends nothing of a batch submitted without them, and a
 * batch submitted with them keeps its messages out of Temporal in plain text.
 */
import { randomUUID } from 'node:crypto';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Redeliver } from '../../../src/client/index';
import { startFlakyEndpoint, type FlakyEndpoint } from '../../../src/demo/flaky-endpoint';
import type { DeliveryInput } from '../../../src/delivery/types';
import type { BatchResult } from '../../../src/contract';
import { ENCRYPTED_ENCODING } from '../../../src/encryption/codec';
import { keylessDataConverter } from '../../../src/encryption/data-converter';
import { parseKeyRing } from '../../../src/encryption/keys';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const key = (byte: number) => Buffer.alloc(32, byte).toString('base64');
const RING = parseKeyRing(`k1:${key(7)}`);

let keyed: Harness;
let endpoint: FlakyEndpoint;
let connection: Connection;

beforeAll(async () => {
  [keyed, endpoint, connection] = await Promise.all([
    startHarness(testAddress(), { encryptionKeys: RING }),
    startFlakyEndpoint(),
    connectClient({ address: testAddress() }),
  ]);
});
afterAll(async () => {
  await keyed?.stop();
  await endpoint?.close();
  await connection?.close();
});

const messages = (device: string, path: string, n: number): DeliveryInput[] =>
  Array.from({ length: n }, (_, i) => ({
    kind: 'event',
    tenant: 'acme',
    device,
    messageId: randomUUID(),
    payload: { reading: `plain ${i}` },
    target: { url: `${endpoint.url}${path}`, headers: { authorization: 'Bearer plain-token' } },
  }));

test('a worker with keys refuses a batch submitted without them: every message a dead letter saying so, nothing sent', async () => {
  const device = `plain-${randomUUID().slice(0, 8)}`;
  // a producer without keys, as Redeliver.connect() makes it
  const keyless = new Redeliver(new Client({ connection, dataConverter: keylessDataConverter() }), { taskQueue: keyed.taskQueue });
  const inputs = messages(device, '/plain-batch', 5);
  const submission = await keyless.submitBatch(inputs);

  // the worker encrypts the batch's result: read with the keys, as an operator would
  const batch: BatchResult = await keyed.client.workflow.getHandle(submission.batches[0]!.workflowId).result();
  expect(batch).toMatchObject({ messages: 5, delivered: 0, handedOver: 5 });
  expect(batch.results.every((r) => r.disposition === 'handed-over' && r.code === 'unencrypted-submission')).toBe(true);
  for (const id of submission.deliveryIds) {
    const result = await keyed.redeliver.getHandle(id).result();
    expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { class: 'client', code: 'unencrypted-submission' } });
    expect(result.reason).toMatch(/submitted without encryption, but this worker has REDELIVER_ENCRYPTION_KEYS set/);
  }
  const letters = await waitFor(
    async () => {
      const found: string[] = [];
      for await (const l of keyed.redeliver.deadLetters({ device })) found.push(l.deliveryId);
      return found;
    },
    (found) => found.length === 5,
    15_000,
    'five dead letters',
  );
  expect(letters.sort()).toEqual([...submission.deliveryIds].sort());
  expect(endpoint.received.filter((r) => r.path === '/plain-batch')).toEqual([]);
});

test('a batch submitted with the keys is delivered, and its start holds the messages encrypted', async () => {
  const device = `sealed-${randomUUID().slice(0, 8)}`;
  const submission = await keyed.redeliver.submitBatch(messages(device, '/sealed-batch', 3));
  expect(await submission.batches[0]!.result()).toMatchObject({ messages: 3, delivered: 3 });
  expect(endpoint.received.filter((r) => r.path === '/sealed-batch')).toHaveLength(3);

  const history = await new Client({ connection }).workflow.getHandle(submission.batches[0]!.workflowId).fetchHistory();
  const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  expect(Buffer.from(input.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
  expect(Buffer.from(input.data!).toString('latin1')).not.toContain('plain-token');
});
