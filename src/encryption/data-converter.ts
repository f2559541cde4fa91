import type { DataConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, EncryptedPlaceholderCodec } from './codec';
import type { KeyRing } from './keys';

/** The failure converter of a process with keys: loaded by path, by the worker's bundler or a pre-built bundle (buildWorkflowBundle). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/**
 * The data converter for a key ring: payloads (message bodies, targets with their credentials, results,
 * memo, summaries) and failure messages are encrypted before they leave the process. The client, the
 * worker and every tool reading histories must use the same keys.
 */
export function encryptingDataConverter(keys: KeyRing): DataConverter {
  return {
    payloadCodecs: [new AesGcmPayloadCodec(keys)],
    failureConverterPath: FAILURE_CONVERTER_PATH,
  };
}

/** The data converter of a process without keys: encrypted payloads read as EncryptedValues (EncryptedPlaceholderCodec). */
export function keylessDataConverter(): DataConverter {
  return { payloadCodecs: [new EncryptedPlaceholderCodec()] };
}
