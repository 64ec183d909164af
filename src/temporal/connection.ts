/** Connection settings follow Temporal's own conventions: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE. */
import { Client, Connection } from '@temporalio/client';
import { DEFAULT_TASK_QUEUE } from '../shared/constants.js';
import { KilnError } from '../shared/errors.js';

/** No Temporal server at the address: the user starts one or fixes TEMPORAL_ADDRESS (exit 2); it may come up later. */
export class TemporalUnreachableError extends KilnError {
  override name = 'TemporalUnreachableError';
  readonly retryable = true;
  override readonly exitCode = 2;
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
