import { describe, expect, it } from 'vitest';
import { buildIdOf, checkBuildId, deploymentNameFor, versioningUnsupported } from '../../../src/temporal/deployment.js';
import { UsageError } from '../../../src/shared/errors.js';

const map = (path: string) => `//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify({ sources: [path] })).toString('base64')}`;

describe('build id', () => {
  it('is the version and a hash of the code, the same wherever the code is installed', () => {
    const a = buildIdOf(`var x = 1;\n${map('/srv/a/node_modules/x.js')}`, '1.2.0');
    const b = buildIdOf(`var x = 1;\n${map('/home/b/kiln/node_modules/x.js')}`, '1.2.0');
    expect(a).toMatch(/^1\.2\.0-[0-9a-f]{12}$/);
    expect(b).toBe(a);
  });

  it('changes with the workflow code and with the version', () => {
    const a = buildIdOf(`var x = 1;\n${map('/a')}`, '1.2.0');
    expect(buildIdOf(`var x = 2;\n${map('/a')}`, '1.2.0')).not.toBe(a);
    expect(buildIdOf(`var x = 1;\n${map('/a')}`, '1.3.0')).not.toBe(a);
  });

  it('one given by hand is checked, with what to fix', () => {
    expect(checkBuildId('1.4.2+g3f2a1c', '--build-id')).toBe('1.4.2+g3f2a1c');
    expect(() => checkBuildId('has space', '--build-id')).toThrow(UsageError);
    expect(() => checkBuildId('', 'KILN_BUILD_ID')).toThrow(/KILN_BUILD_ID "": expected letters, digits/);
  });
});

describe('deployment name', () => {
  it("is the task queue's unless KILN_DEPLOYMENT names one", () => {
    expect(deploymentNameFor('kiln', {})).toBe('kiln');
    expect(deploymentNameFor('kiln-team-a', {})).toBe('kiln-team-a');
    expect(deploymentNameFor('kiln', { KILN_DEPLOYMENT: 'agents' })).toBe('agents');
  });

  it('refuses a dot, which the server refuses, before any worker starts', () => {
    expect(() => deploymentNameFor('kiln', { KILN_DEPLOYMENT: 'team.a' })).toThrow(/KILN_DEPLOYMENT.*no dots/);
    expect(() => deploymentNameFor('q.1', {})).toThrow(/from the task queue.*set KILN_DEPLOYMENT/);
  });
});

describe('whether the server takes versioned workers', () => {
  const server = (err?: { code: number; message: string }) =>
    ({
      workflowService: {
        listWorkerDeployments: () => (err ? Promise.reject(Object.assign(new Error(err.message), { code: err.code })) : Promise.resolve({})),
      },
    }) as unknown as Parameters<typeof versioningUnsupported>[0];

  it('a server with the deployment API: versioned', async () => {
    expect(await versioningUnsupported(server(), 'default')).toBeUndefined();
  });

  it('an old server, or one with it switched off: unversioned, with the reason and the fix', async () => {
    expect(await versioningUnsupported(server({ code: 12, message: '12 UNIMPLEMENTED: unknown method' }), 'default')).toMatch(
      /no Worker Deployment API.*1\.28/,
    );
    expect(
      await versioningUnsupported(server({ code: 7, message: '7 PERMISSION_DENIED: Worker Deployment Versions are disabled on this namespace.' }), 'team'),
    ).toMatch(/disabled in namespace team: set .*system\.enableDeploymentVersions=true/);
  });

  it('anything else (the server is down) is an error, not a silent fallback', async () => {
    await expect(versioningUnsupported(server({ code: 14, message: '14 UNAVAILABLE: connection refused' }), 'default')).rejects.toThrow(/UNAVAILABLE/);
  });
});
