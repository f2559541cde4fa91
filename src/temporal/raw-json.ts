/*
 * JSON payloads made and read with Node's own UTF-8 and JSON. The SDK's JSON converter decodes and encodes UTF-8 in
 * JavaScript (the same code the workflow sandbox needs), which for a batch of hundreds of messages was the largest
 * single payload cost of the client that starts it and of the worker that runs it (issue 32's profile). The payloads
 * are the SDK's `json/plain` ones, byte for byte the same JSON: anyone reads them as before.
 */
import { defaultPayloadConverter, RawValue, type Payload } from '@temporalio/common';

const ENCODING = 'encoding';
const JSON_PLAIN = 'json/plain';
const JSON_PLAIN_BYTES = Buffer.from(JSON_PLAIN);

/** A `json/plain` payload's value, decoded with Node's UTF-8 and JSON; any other payload by the SDK's converter. */
export function fromJsonPayload<T>(payload: Payload): T {
  const encoding = payload.metadata?.[ENCODING];
  if (!encoding || !payload.data || Buffer.compare(encoding, JSON_PLAIN_BYTES) !== 0)
    return defaultPayloadConverter.fromPayload<T>(payload);
  return JSON.parse(Buffer.from(payload.data.buffer, payload.data.byteOffset, payload.data.byteLength).toString('utf8')) as T;
}

/**
 * A value as the SDK's `json/plain` payload, encoded with Node's JSON and UTF-8: an argument (a client's start of a
 * batch, hundreds of messages) or a result passed so is sent as it is, and read as any JSON payload.
 */
export function nativeJson<T>(value: T): RawValue<T> {
  const json = JSON.stringify(value) as string | undefined;
  // undefined has no JSON: the SDK's converter has its own payload for it
  if (json === undefined) return new RawValue(value);
  return RawValue.fromPayload({ metadata: { [ENCODING]: JSON_PLAIN_BYTES }, data: Buffer.from(json) }) as RawValue<T>;
}
