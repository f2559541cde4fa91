import type { DataConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, EncryptedPlaceholderCodec } from './codec';
import type { KeyRing } from './keys';

/**
 * The data converter for a key ring: payloads (message bodies, targets with their credentials, results,
 * memo, summaries) and failure messages are encrypted before they leave the process. The client, the
 * worker and every tool reading histories must use the same keys.
 */
export function encryptingDataConverter(keys: KeyRing): DataConverter {
  return {
    payloadCodecs: [new AesGcmPayloadCodec(keys)],
    failureConverterPath: require.resolve('./failure-converter'),
  };
}

/** The data converter of a process without keys: encrypted payloads read as EncryptedValues (codec.ts). */
export function keylessDataConverter(): DataConverter {
  return { payloadCodecs: [new EncryptedPlaceholderCodec()] };
}
