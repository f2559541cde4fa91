export {
  AesGcmPayloadCodec,
  EncryptedPlaceholderCodec,
  isEncryptedValue,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  CIPHER,
  type EncryptedValue,
} from './codec';
export { encryptingDataConverter, keylessDataConverter } from './data-converter';
export { parseKeyRing, readKeyRing, type EncryptionKey, type KeyRing } from './keys';
export { startCodecServer, type CodecServer, type CodecServerOptions } from './codec-server';
