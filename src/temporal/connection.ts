/** Connection settings follow Temporal's own conventions: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE. */
import { Client, Connection } from '@temporalio/client';
import { DEFAULT_TASK_QUEUE } from '../shared/constants.js';

export class TemporalUnreachableError extends Error {
  override name = 'TemporalUnreachableError';
}

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** the shared queue; KILN_TASK_QUEUE separates deployments (and tests) on one server */
  taskQueue: string;
}

export function temporalSettings(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  return {
    address: env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.KILN_TASK_QUEUE || DEFAULT_TASK_QUEUE,
  };
}

export async function connectClient(s: TemporalSettings = temporalSettings()): Promise<{ client: Client; connection: Connection }> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: s.address, connectTimeout: 3000 });
    await connection.workflowService.getSystemInfo({});
  } catch {
    throw new TemporalUnreachableError(
      `cannot reach Temporal at ${s.address}: start the embedded server with \`kiln dev\` (or set TEMPORAL_ADDRESS to your cluster)`,
    );
  }
  return { client: new Client({ connection, namespace: s.namespace }), connection };
}
