/**
 * The start `kiln serve` signed for one execution, read back from that execution's history: the
 * startedBy signal the server sent right after the start (src/auth/attestation.ts). Anyone may
 * send such a signal; only one signed with the server's key for this very execution counts, so
 * the history of another run, or of an earlier execution under the same id, gives nothing.
 */
import type { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import { verifyRunStart } from '../auth/attestation.js';
import { startedBySignal } from '../shared/messages.js';
import type { StartAttestation } from '../shared/types.js';

export interface SignedStart {
  tenant: string;
  repo: string;
  user: string;
}

/** The server sends its signal right after the start: it is among the first events, so a few pages are read at most. */
const PAGE_EVENTS = 100;
const MAX_PAGES = 5;

export async function signedStartOf(client: Client, key: Buffer, workflowId: string, execution: string): Promise<SignedStart | undefined> {
  const converter = client.options.loadedDataConverter;
  let nextPageToken: Uint8Array | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    let res;
    try {
      res = await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId: execution },
        maximumPageSize: PAGE_EVENTS,
        nextPageToken,
      });
    } catch {
      return undefined;
    }
    for (const e of res.history?.events ?? []) {
      const signal = e.workflowExecutionSignaledEventAttributes;
      if (signal?.signalName !== startedBySignal.name) continue;
      const a = await decodeFromPayloadsAtIndex<StartAttestation>(converter, 0, signal.input?.payloads).catch(() => undefined);
      if (a && verifyRunStart(key, { execution, runId: workflowId }, a)) return { tenant: a.tenant, repo: a.repo, user: a.user };
    }
    if (!res.nextPageToken?.length) return undefined;
    nextPageToken = res.nextPageToken;
  }
  return undefined;
}
