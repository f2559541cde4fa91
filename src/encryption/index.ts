export { AesGcmPayloadCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA, CIPHER } from './codec';
export { encryptingDataConverter } from './data-converter';
export { parseKeyRing, readKeyRing, type EncryptionKey, type KeyRing } from './keys';
export { startCodecServer, type CodecServer, type CodecServerOptions } from './codec-server';
