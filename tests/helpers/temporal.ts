/** The real Temporal dev server for tests: the cached CLI build, the SDK download as fallback. */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalCli } from '../../src/temporal/binary.js';
import { KILN_SEARCH_ATTRIBUTE_KEYS } from '../../src/temporal/search-attributes.js';

export async function startTestServer(opts: { dbFilename?: string; port?: number } = {}): Promise<TestWorkflowEnvironment> {
  const path = findTemporalCli();
  return TestWorkflowEnvironment.createLocal({
    server: {
      ...(path ? { executable: { type: 'existing-path', path } } : {}),
      ...opts,
      searchAttributes: [...KILN_SEARCH_ATTRIBUTE_KEYS],
    },
  });
}
