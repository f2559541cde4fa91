import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Loaded by path (the SDK's `failureConverterPath`) when encryption is on: failure messages and stack
 * traces travel in an encoded payload that the codec encrypts, since a reason may quote what an endpoint
 * said or name a target.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
