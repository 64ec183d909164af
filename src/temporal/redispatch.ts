/**
 * Asks the server to hand a run's pending workflow task to its task queue again: the operator's
 * `tdbg workflow refresh-tasks`, an admin call the SDK does not wrap. The embedded dev server,
 * restarted on its database, can keep a task that was queued for a build with no worker and never
 * hand it to that build's worker once one polls; a fresh copy of the task is matched at once.
 * A duplicate is harmless: the server starts a workflow task once, and drops the other copy.
 */
import { credentials, Client as GrpcClient, Metadata } from '@grpc/grpc-js';
import proto from '@temporalio/proto';
import protobuf from 'protobufjs/minimal.js';

const REFRESH = '/temporal.server.api.adminservice.v1.AdminService/RefreshWorkflowTasks';

/** temporal.server.api.adminservice.v1.RefreshWorkflowTasksRequest: execution = 2, namespace_id = 3 */
export function refreshRequest(namespaceId: string, workflowId: string, runId: string): Buffer {
  const execution = proto.temporal.api.common.v1.WorkflowExecution.encode({ workflowId, runId }).finish();
  return Buffer.from(
    protobuf.Writer.create()
      .uint32((2 << 3) | 2)
      .bytes(execution)
      .uint32((3 << 3) | 2)
      .string(namespaceId)
      .finish(),
  );
}

/** The server at `address` (plain gRPC: the embedded dev server's own port) refreshes one run's tasks. */
export async function refreshWorkflowTasks(address: string, namespaceId: string, workflowId: string, runId: string): Promise<void> {
  const client = new GrpcClient(address, credentials.createInsecure());
  try {
    await new Promise<void>((resolve, reject) =>
      client.makeUnaryRequest(
        REFRESH,
        (b: Buffer) => b,
        (b: Buffer) => b,
        refreshRequest(namespaceId, workflowId, runId),
        new Metadata(),
        { deadline: Date.now() + 10_000 },
        (err) => (err ? reject(err) : resolve()),
      ),
    );
  } finally {
    client.close();
  }
}
