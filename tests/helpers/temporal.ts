/** The real Temporal dev server for tests, configured as `kiln dev` starts it: the cached CLI build, the SDK download as fallback. */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalCli } from '../../src/temporal/binary.js';
import { KILN_SEARCH_ATTRIBUTE_KEYS } from '../../src/shared/search-attributes.js';
import { agentDynamicConfigArgs } from '../../src/temporal/dev-server.js';

export async function startTestServer(opts: { dbFilename?: string; port?: number } = {}): Promise<TestWorkflowEnvironment> {
  const path = findTemporalCli();
  return TestWorkflowEnvironment.createLocal({
    server: {
      ...(path ? { executable: { type: 'existing-path', path } } : {}),
      ...opts,
      searchAttributes: [...KILN_SEARCH_ATTRIBUTE_KEYS],
      // the queue readers' poll limits Kiln's own dev server raises: without them back-to-back
      // tasks wait ~44 ms each and tests time a different server than users run
      extraArgs: agentDynamicConfigArgs(),
    },
  });
}
