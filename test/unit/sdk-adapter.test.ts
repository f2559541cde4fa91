import {
  defaultFailureConverter,
  defaultPayloadConverter,
  type LoadedDataConverter,
  type Payload,
  type PayloadCodec,
} from '@temporalio/common';
import type { WorkflowExecutionDescription } from '@temporalio/client';
import { historyFileText, pendingActivityHeartbeat, savedHeartbeat } from '../../src/temporal/sdk-adapter';

/*
 * The pure part of the SDK adapter: a retrying activity's heartbeat as the client and the workflow's progress
 * read it (a live status, a pause's true count), and a history as a recorded fixture.
 */

/** A codec that reverses the bytes: a heartbeat stored through it reads back only if decoded. */
const reversing: PayloadCodec = {
  encode: async (payloads) => payloads.map((p) => ({ ...p, data: Uint8Array.from(p.data!).reverse() })),
  decode: async (payloads) => payloads.map((p) => ({ ...p, data: Uint8Array.from(p.data!).reverse() })),
};
const converter = (codecs: PayloadCodec[] = []): LoadedDataConverter => ({
  payloadConverter: defaultPayloadConverter,
  failureConverter: defaultFailureConverter,
  payloadCodecs: codecs,
});
const description = (pending: { activityType?: { name: string }; heartbeatDetails?: { payloads: Payload[] } }[]) =>
  ({ raw: { pendingActivities: pending } }) as unknown as Pick<WorkflowExecutionDescription, 'raw'>;
const progress = { attempts: 4, nextAttemptAt: 1_800_000_000_000 };

test('the progress a pending activity of the type saved, decoded through the codecs', async () => {
  const stored = await reversing.encode([defaultPayloadConverter.toPayload(progress)]);
  const pending = description([
    { activityType: { name: 'deliverAttempt' }, heartbeatDetails: { payloads: [defaultPayloadConverter.toPayload({ other: true })] } },
    { activityType: { name: 'retryDelivery' }, heartbeatDetails: { payloads: stored } },
  ]);
  expect(await pendingActivityHeartbeat(converter([reversing]), pending, 'retryDelivery')).toEqual(progress);
});

test('no progress when no activity of the type is pending, or it has not heartbeated yet', async () => {
  expect(await pendingActivityHeartbeat(converter(), description([]), 'retryDelivery')).toBeNull();
  expect(await pendingActivityHeartbeat(converter(), { raw: {} } as Pick<WorkflowExecutionDescription, 'raw'>, 'retryDelivery')).toBeNull();
  expect(
    await pendingActivityHeartbeat(converter(), description([{ activityType: { name: 'retryDelivery' } }]), 'retryDelivery'),
  ).toBeNull();
  const empty = description([{ activityType: { name: 'retryDelivery' }, heartbeatDetails: { payloads: [] } }]);
  expect(await pendingActivityHeartbeat(converter(), empty, 'retryDelivery')).toBeNull();
});

test('an activity starts from what its earlier attempt saved, and from nothing on its first', () => {
  expect(savedHeartbeat<typeof progress>({ heartbeatDetails: progress })).toEqual(progress);
  expect(savedHeartbeat<typeof progress>({})).toBeUndefined();
});

test('a history as a fixture: Temporal JSON, indented, ending in a newline', () => {
  const text = historyFileText({ events: [{ eventId: 1, eventType: 1 }] } as unknown as Parameters<typeof historyFileText>[0]);
  expect(text.endsWith('}\n')).toBe(true);
  const parsed = JSON.parse(text) as { events: { eventId: string; eventType: string }[] };
  expect(parsed.events[0]).toEqual({ eventId: '1', eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED' });
  expect(text).toContain('\n  "events"');
});
