/**
 * What the commands that reach a run share. Each command loads what it needs when it runs: the
 * Temporal client alone (gRPC, protobuf descriptors) is most of a start-up, and `kiln --help` or
 * a flag error needs none of it.
 */
import type { Client } from '@temporalio/client';

export const runsModule = () => import('../client/runs.js');
export const connectClient = async () => (await import('../temporal/connection.js')).connectClient();
export type RunHandle = ReturnType<Awaited<ReturnType<typeof runsModule>>['handleFor']>;

/** Connects, checks the run exists, hands it to `fn`, and closes the connection whatever happens. */
export async function withRun(runId: string, fn: (handle: RunHandle, client: Client) => Promise<void>): Promise<void> {
  const { handleFor, ensureExists } = await runsModule();
  const { client, connection } = await connectClient();
  try {
    const handle = handleFor(client, runId);
    await ensureExists(handle);
    await fn(handle, client);
  } finally {
    await connection.close();
  }
}
