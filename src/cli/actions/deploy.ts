/** `kiln deploy status` and `kiln deploy set-current`: which build takes new runs, and which still drain. */
import { connectClient, temporalSettings } from '../../temporal/connection.js';
import { checkBuildId, deploymentNameFor, describeDeployment, setCurrentVersion, versioningUnsupported, waitPropagated } from '../../temporal/deployment.js';
import { CliError } from '../../shared/errors.js';

function target(o: { deployment?: string }): { namespace: string; deploymentName: string } {
  const s = temporalSettings();
  return {
    namespace: s.namespace,
    deploymentName: deploymentNameFor(s.taskQueue, o.deployment ? { ...process.env, KILN_DEPLOYMENT: o.deployment } : process.env),
  };
}

export async function deployStatus(o: { deployment?: string }, out: (s: string) => void): Promise<void> {
  const { namespace, deploymentName } = target(o);
  const { connection } = await connectClient();
  try {
    const why = await versioningUnsupported(connection, namespace);
    if (why) throw new CliError(`${why}; workers there run unversioned`);
    const d = await describeDeployment(connection, namespace, deploymentName);
    if (!d) return out(`deployment ${deploymentName}: no versioned worker has polled yet (start \`kiln worker\`)`);
    out(`deployment ${deploymentName} (namespace ${namespace}): new runs go to ${d.current ? `build ${d.current}` : 'unversioned workers'}`);
    for (const v of d.versions) {
      // draining: runs pinned to it are open, so its workers must keep running; drained: they may stop
      const note =
        v.status === 'draining' ? ' — runs pinned to it are open: keep its workers' : v.status === 'drained' ? ' — no open runs: its workers may stop' : '';
      out(`  ${v.buildId === d.current ? '*' : ' '} ${v.buildId}  ${v.status}${note}`);
    }
  } finally {
    await connection.close();
  }
}

export async function deploySetCurrent(o: { buildId: string; deployment?: string }, out: (s: string) => void): Promise<void> {
  const { namespace, deploymentName } = target(o);
  const buildId = checkBuildId(o.buildId, '--build-id');
  const { connection } = await connectClient();
  try {
    const why = await versioningUnsupported(connection, namespace);
    if (why) throw new CliError(`${why}; there is no current build to set`);
    const before = await describeDeployment(connection, namespace, deploymentName);
    if (before?.current === buildId) return out(`build ${buildId} already takes new runs of deployment ${deploymentName}`);
    await setCurrentVersion(connection, namespace, { deploymentName, buildId }, { identity: 'kiln deploy set-current' });
    if (!(await waitPropagated(connection, namespace, deploymentName))) {
      out(`build ${buildId} is current, but the server is still moving task queues to it: a run started in the next moments may still go to the old build`);
    }
    out(`build ${buildId} now takes new runs of deployment ${deploymentName}`);
    if (before?.current) out(`runs started on build ${before.current} finish there: keep its workers until \`kiln deploy status\` says it is drained`);
  } finally {
    await connection.close();
  }
}
