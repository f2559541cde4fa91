import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { KeyRing } from './keys';

/** The metadata of an encrypted payload (the names Temporal's encryption samples use). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
export const CIPHER_METADATA = 'encryption-cipher';
export const CIPHER = 'AES-256-GCM';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypts every payload with AES-256-GCM: the whole payload (its metadata and data) becomes the
 * ciphertext of a new one whose metadata says only `binary/encrypted` and the id of the key, so that keys
 * can rotate: encrypt with the current key, decrypt with whichever key the payload names. Data layout:
 * 12-byte random IV, ciphertext, 16-byte authentication tag. Payloads that are not encrypted pass
 * through `decode` unchanged, so histories written before encryption was switched on stay readable.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  constructor(private readonly keys: KeyRing) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys.current;
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
          [KEY_ID_METADATA]: Buffer.from(id),
          [CIPHER_METADATA]: Buffer.from(CIPHER),
        },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
      const id = text(payload.metadata?.[KEY_ID_METADATA]);
      const entry = id === undefined ? undefined : this.keys.byId.get(id);
      if (!entry)
        throw new Error(
          `a payload is encrypted with key id ${JSON.stringify(id)}, which is not among this process's keys (${[...this.keys.byId.keys()].join(', ')})`,
        );
      const data = payload.data ?? new Uint8Array();
      if (data.length < IV_BYTES + TAG_BYTES) throw new Error(`an encrypted payload (key id ${id}) is too short to be one`);
      const decipher = createDecipheriv('aes-256-gcm', entry.key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      let plain: Buffer;
      try {
        plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw new Error(`an encrypted payload (key id ${id}) does not decrypt: altered, or encrypted with another key of that id`);
      }
      return temporal.api.common.v1.Payload.decode(plain) as Payload;
    });
  }
}

function text(bytes: Uint8Array | null | undefined): string | undefined {
  return bytes ? Buffer.from(bytes).toString('utf8') : undefined;
}

/** What a payload this process cannot decrypt reads as: which key it needs, instead of its value. */
export interface EncryptedValue {
  $encrypted: { keyId: string | null };
}

export function isEncryptedValue(value: unknown): value is EncryptedValue {
  return typeof value === 'object' && value !== null && '$encrypted' in value;
}

/**
 * The codec of a process without keys (a client or the CLI): encrypted payloads decode to an
 * EncryptedValue instead of failing, so what Temporal keeps in the clear (ids, search attributes, times)
 * can still be read and the rest shown as encrypted. It encodes nothing: without keys, payloads are stored
 * as they are.
 */
export class EncryptedPlaceholderCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
      const value: EncryptedValue = { $encrypted: { keyId: text(payload.metadata?.[KEY_ID_METADATA]) ?? null } };
      return { metadata: { [METADATA_ENCODING_KEY]: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(value)) };
    });
  }
}
