/** `kiln dev`: the embedded server (persistent SQLite, Web UI) and a worker; Ctrl-C stops both. */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kilnHome, startEmbedded } from '../../embedded.js';
import { devStateFile, type DevState } from '../../client/runs.js';
import { modelStatus, operatorStatus, sandboxStatus } from '../../worker.js';
import { loadKeyring } from '../../codec/keys.js';
import { codecStatus, dataConverterFor } from '../../codec/data-converter.js';
import { freePort } from '../../temporal/dev-server.js';
import { metricsStatus } from '../../temporal/metrics.js';
import { openCodecServer } from './codec-server.js';
import { handleStrandedRuns, type StrandedChoice } from './stranded-runs.js';
import { settings } from '../../settings.js';

export async function runDev(
  o: { worker: boolean; port: number; uiPort: number; db?: string; allowSandboxOff?: boolean; codecEndpoint?: string; stranded?: StrandedChoice },
  out: (s: string) => void,
): Promise<void> {
  const dbFile = o.db ?? join(kilnHome(), 'temporal.db');
  const keyring = await loadKeyring();
  // with keys and no codec endpoint of its own, the UI gets one here: encrypted runs stay readable in it
  const codec =
    keyring && !o.codecEndpoint
      ? await openCodecServer({ port: await freePort([o.uiPort, o.port]), origin: [`http://127.0.0.1:${o.uiPort}`, `http://localhost:${o.uiPort}`] })
      : undefined;
  const env = await startEmbedded({
    dbFile,
    port: o.port,
    uiPort: o.uiPort,
    worker: o.worker,
    allowSandboxOff: o.allowSandboxOff,
    codecEndpoint: o.codecEndpoint,
    ...(codec ? { codec: { url: codec.url, token: codec.token } } : {}),
    log: out,
  }).catch(async (err: unknown) => {
    await codec?.close();
    throw err;
  });
  out(`Temporal dev server: ${env.address} (SQLite ${dbFile})`);
  out(`Web UI:              ${env.uiUrl}`);
  out(`                     ${codecStatus(dataConverterFor(keyring))}`);
  if (env.codecLogin) out(`codec:               open ${env.codecLogin} once in your browser to see encrypted runs decrypted in the Web UI`);
  else if (o.codecEndpoint) out(`codec endpoint:      ${o.codecEndpoint}`);
  out(env.worker ? `worker:              running (host queue ${env.worker.hostQueue})` : 'worker:              not started (--no-worker)');
  if (env.worker) out(`                     ${await sandboxStatus()}`);
  if (env.worker) out(`                     ${operatorStatus(env.operator)}`);
  if (env.worker) out(`                     ${modelStatus()}`);
  if (env.worker) out(`                     ${metricsStatus(settings().metricsAddr)}`);
  if (env.worker) out(`                     ${env.worker.versioning}`);
  const stranded =
    env.worker?.version &&
    (await handleStrandedRuns({
      client: env.client,
      version: env.worker.version,
      address: env.address,
      workerEnv: o.allowSandboxOff ? { ...process.env, KILN_ALLOW_SANDBOX_OFF: '1' } : process.env,
      choice: o.stranded,
      interactive: process.stdin.isTTY === true,
      out,
    }).catch((err: unknown) => {
      // the server and this build's worker run all the same: only the earlier builds' runs wait
      out(`                     could not look for runs of earlier builds: ${(err as Error).message}`);
      return undefined;
    }));
  if (env.address !== '127.0.0.1:7233') out(`other terminals:     export TEMPORAL_ADDRESS=${env.address} KILN_UI_URL=${env.uiUrl}`);
  // other terminals find the Web UI link here (kiln run, kiln status) without KILN_UI_URL
  const state: DevState = { address: env.address, uiUrl: env.uiUrl, pid: process.pid };
  writeFileSync(devStateFile(), JSON.stringify(state));
  out('Ctrl-C stops everything.');
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  out('stopping…');
  rmSync(devStateFile(), { force: true });
  if (stranded) await stranded.stop();
  await env.stop();
  await codec?.close();
}
