import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { encodeErrorToFailure, decodeFailure } from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import { describe, expect, it } from 'vitest';
import { dataConverterFor } from '../../../src/codec/data-converter.js';

const CANARY = 'failure-canary-' + randomBytes(4).toString('hex');

describe("Kiln's data converter", () => {
  it('with keys: an error message and stack are encrypted, and come back for the keyring', async () => {
    const { dataConverter, keyId } = dataConverterFor({ active: 'k1', keys: new Map([['k1', randomBytes(32)]]) });
    expect(keyId).toBe('k1');
    // the SDK loads the failure converter by path, as the worker and the client do
    const loaded = loadDataConverter(dataConverter);
    const failure = await encodeErrorToFailure(loaded, ApplicationFailure.nonRetryable(`tool output: ${CANARY}`));
    expect(JSON.stringify(failure)).not.toContain(CANARY);
    expect(failure.message).toBe('Encoded failure');
    const back = loaded.failureConverter.failureToError(await decodeFailure(loaded.payloadCodecs, failure), loaded.payloadConverter);
    expect(back.message).toContain(CANARY);
  });

  it('without keys (control): errors stay as they were', async () => {
    const { dataConverter, keyId } = dataConverterFor(undefined);
    expect(keyId).toBeUndefined();
    const failure = await encodeErrorToFailure(loadDataConverter(dataConverter), ApplicationFailure.nonRetryable(`tool output: ${CANARY}`));
    expect(failure.message).toContain(CANARY);
  });
});
