/**
 * Error messages and stack traces carry tool output and paths: with encryption on they become
 * payloads, so the codec seals them too. Loaded by path (the SDK's failureConverterPath), in the
 * workflow bundle and in the worker and client.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
