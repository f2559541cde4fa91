import { setActivityOptions } from '@temporalio/activity';
import { RawValue, rawValueTypeInfo } from '@temporalio/common';
import { fromJsonPayload, nativeJson } from '../temporal/raw-json';

/**
 * An activity of one argument whose argument and result this worker decodes and encodes itself, with Node's own
 * UTF-8 and JSON (src/temporal/raw-json.ts), through the SDK's type info: a batch's hundreds of messages in and
 * results out. Called directly (tests, not through Temporal), it takes and gives plain values.
 */
export function nativeJsonActivity<I, O>(activity: (input: I) => Promise<O>): (input: I) => Promise<O> {
  const wrapped = async (input: I | RawValue<I>): Promise<O | RawValue<O>> => {
    if (!(input instanceof RawValue)) return activity(input);
    return nativeJson(await activity(fromJsonPayload<I>(input.payload)));
  };
  setActivityOptions({ typeInfo: { inputTypes: [rawValueTypeInfo], outputType: rawValueTypeInfo } }, wrapped);
  return wrapped as (input: I) => Promise<O>;
}
