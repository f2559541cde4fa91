import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import { AesGcmPayloadCodec, ENCRYPTED_ENCODING } from '../encryption/codec';
import { storedActivityInput } from '../temporal/sdk-adapter';
import type { AttemptFailureDetails } from '../contract';

/** Why a worker with keys refused a delivery submitted without them, in the words its dead letter keeps. */
export const UNENCRYPTED_SUBMISSION =
  'submitted without encryption, but this worker has REDELIVER_ENCRYPTION_KEYS set: the message and its target (headers, credentials) ' +
  'are stored in Temporal in plain text. Nothing was sent. Give the client or CLI that submitted it the same REDELIVER_ENCRYPTION_KEYS ' +
  '(or _FILE), and submit it again';

/** The code of an attempt that sent nothing because the check could not be made: the next attempt checks first. */
export const SUBMISSION_UNCHECKED = 'submission-unchecked';

/** Asked by a delivery's first attempt before it sends: a refusal, or null to go ahead. */
export type SubmissionCheck = () => Promise<AttemptFailureDetails | null>;

/**
 * A worker with keys does not act on a delivery a producer without keys submitted: that delivery's message
 * and credentials sit in Temporal's history in plain text, and the producer must hear of it. Only the
 * stored payload tells: the worker's codec passes plain payloads through (histories from before
 * encryption stay readable), so workflows and activities see the same values either way. The first
 * attempt therefore reads its run's start event as Temporal stores it (a single submit's standalone first attempt,
 * its own input), and a refusal is that attempt's
 * failure, `rejected` by the workflow: decided once and kept in the history, with no change to the
 * workflow's commands. Deliveries that had their first attempt before the keys came go on as they were.
 * None when the worker has no keys (its client encrypts nothing).
 */
export function submissionCheck(client: Client | null): SubmissionCheck | undefined {
  if (!client?.options.loadedDataConverter.payloadCodecs.some((codec) => codec instanceof AesGcmPayloadCodec)) return undefined;
  return async () => {
    const { info } = Context.current();
    let input;
    try {
      input = await storedActivityInput(client, info);
    } catch (err) {
      // fail closed: nothing goes out until the check has been made (the retrying activity makes it again)
      const reason = `could not read how the delivery is stored, to check it was submitted encrypted (${(err as Error).message}); nothing was sent`;
      return { class: 'server', retryable: true, code: SUBMISSION_UNCHECKED, reason, durationMs: 0 };
    }
    const encoding = Buffer.from(input?.metadata?.[METADATA_ENCODING_KEY] ?? new Uint8Array()).toString();
    if (!input || encoding === ENCRYPTED_ENCODING) return null;
    return { class: 'client', retryable: false, code: 'unencrypted-submission', reason: UNENCRYPTED_SUBMISSION, durationMs: 0 };
  };
}
