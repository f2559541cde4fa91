import { setActivityOptions } from '@temporalio/activity';
import { defaultPayloadConverter, RawValue, rawValueTypeInfo, type Payload } from '@temporalio/common';

/**
 * An activity of one argument whose argument and result this worker decodes and encodes itself, with Node's own
 * UTF-8 and JSON: the SDK's JSON converter decodes and encodes UTF-8 in JavaScript (the same code the workflow
 * sandbox needs), which for a batch's hundreds of messages in and results out was a worker's largest single
 * payload cost (issue 32's profile). The payloads are the SDK's `json/plain` ones, byte for byte the same JSON:
 * clients, the UI and older workers read them as before, and anything not `json/plain` goes to the SDK's
 * converter. Called directly (tests, not through Temporal), it takes and gives plain values.
 */
export function nativeJsonActivity<I, O>(activity: (input: I) => Promise<O>): (input: I) => Promise<O> {
  const wrapped = async (input: I | RawValue<I>): Promise<O | RawValue<O>> => {
    if (!(input instanceof RawValue)) return activity(input);
    return jsonPayload(await activity(fromJsonPayload<I>(input.payload)));
  };
  setActivityOptions({ typeInfo: { inputTypes: [rawValueTypeInfo], outputType: rawValueTypeInfo } }, wrapped);
  return wrapped as (input: I) => Promise<O>;
}

const ENCODING = 'encoding';
const JSON_PLAIN = 'json/plain';
const JSON_PLAIN_BYTES = Buffer.from(JSON_PLAIN);

function fromJsonPayload<T>(payload: Payload): T {
  const encoding = payload.metadata?.[ENCODING];
  if (!encoding || !payload.data || Buffer.compare(encoding, JSON_PLAIN_BYTES) !== 0)
    return defaultPayloadConverter.fromPayload<T>(payload);
  return JSON.parse(Buffer.from(payload.data.buffer, payload.data.byteOffset, payload.data.byteLength).toString('utf8')) as T;
}

function jsonPayload<T>(value: T): RawValue<T> {
  const json = JSON.stringify(value) as string | undefined;
  // undefined has no JSON: the SDK's converter has its own payload for it
  if (json === undefined) return new RawValue(value);
  return RawValue.fromPayload({ metadata: { [ENCODING]: JSON_PLAIN_BYTES }, data: Buffer.from(json) }) as RawValue<T>;
}
