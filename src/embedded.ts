/**
 * Kiln's embedded Temporal: the official CLI's dev server on this machine with a SQLite file,
 * and optionally a worker in this process. Where no CLI binary is found the SDK downloads one
 * (that needs the internet).
 */
import { Client, Connection } from '@temporalio/client';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { startWorker, type RunningWorker } from './worker.js';
import { defaultDeps } from './activities/deps.js';
import type { OperatorConfig } from './policy/run-request.js';
import { findTemporalCli } from './temporal/binary.js';
import type { GuardedCodec } from './temporal/ui-guard.js';
import { temporalSettings } from './temporal/connection.js';
import { agentDynamicConfigArgs, freePort, sqlitePragmaArgs, startDevServer } from './temporal/dev-server.js';
import { KILN_SEARCH_ATTRIBUTE_KEYS } from './shared/search-attributes.js';
import { installQuietRuntime } from './temporal/quiet-runtime.js';
import { kilnDataConverter } from './codec/data-converter.js';
import { settings as kilnSettings, settingsFrom } from './settings.js';

export function kilnHome(env: NodeJS.ProcessEnv = process.env): string {
  return settingsFrom(env).home ?? join(homedir(), '.kiln');
}

export interface Embedded {
  address: string;
  uiUrl: string;
  client: Client;
  worker?: RunningWorker;
  operator: OperatorConfig;
  /** with `codec`: the link that lets a browser see encrypted runs decrypted */
  codecLogin?: string;
  stop(): Promise<void>;
}

/**
 * `allowSandboxOff`: the person who starts `kiln dev` is this embedded worker's operator, but only
 * by saying so (`kiln dev --allow-sandbox-off` or KILN_ALLOW_SANDBOX_OFF=1 in their own shell); a
 * run request alone never makes them one.
 */
export async function startEmbedded(o: {
  dbFile: string;
  port?: number;
  uiPort?: number;
  worker: boolean;
  allowSandboxOff?: boolean;
  /** the Web UI's remote codec endpoint, as a person gave it (`kiln dev --codec-endpoint`) */
  codecEndpoint?: string;
  /** Kiln's own codec server, which the UI reaches through the guard (ui-guard.ts) */
  codec?: GuardedCodec;
  log?: (s: string) => void;
}): Promise<Embedded> {
  const converter = await kilnDataConverter();
  const port = o.port ?? (await freePort());
  const uiPort = o.uiPort ?? (await freePort([port]));
  const binary = findTemporalCli();
  let address: string;
  let uiUrl: string;
  let stopServer: () => Promise<void>;
  let codecLogin: string | undefined;
  if (binary) {
    const server = await startDevServer({ binary, dbFile: o.dbFile, port, uiPort, codecEndpoint: o.codecEndpoint, codec: o.codec, log: o.log });
    address = server.address;
    uiUrl = server.uiUrl;
    codecLogin = server.codecLogin;
    if (server.exposure) o.log?.(`warning: ${server.exposure}`);
    stopServer = () => server.stop();
  } else {
    o.log?.('no Temporal CLI found (run `npm run setup` to build it offline); trying the SDK download');
    // that server's UI has no guard to carry the codec on its own origin: its UI shows ciphertext
    if (o.codec) o.log?.('the Web UI of that server shows encrypted runs as ciphertext (no guard to reach the codec through)');
    const { TestWorkflowEnvironment } = await import('@temporalio/testing');
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        dbFilename: o.dbFile,
        port,
        ui: true,
        uiPort,
        searchAttributes: [...KILN_SEARCH_ATTRIBUTE_KEYS],
        extraArgs: [...sqlitePragmaArgs(), ...agentDynamicConfigArgs(), ...(o.codecEndpoint ? ['--ui-codec-endpoint', o.codecEndpoint] : [])],
      },
    });
    address = `127.0.0.1:${port}`;
    uiUrl = `http://127.0.0.1:${uiPort}`;
    stopServer = () => env.teardown();
  }
  // only with a worker, and only once the server is up: a Runtime that never hosts a worker is
  // never shut down and would keep Node alive after a failed start
  // KILN_METRICS_ADDR: this worker's Prometheus endpoint, as for `kiln worker`
  if (o.worker) installQuietRuntime('ERROR', process.env, kilnSettings().metricsAddr);
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace: 'default', dataConverter: converter.dataConverter });
  const deps = defaultDeps(o.allowSandboxOff ? { ...process.env, KILN_ALLOW_SANDBOX_OFF: '1' } : process.env);
  // the only worker there is: its build takes new runs even when an earlier `kiln dev` set another
  const worker = o.worker
    ? await startWorker({
        settings: { ...temporalSettings(), address, namespace: 'default' },
        deps,
        dataConverter: converter,
        versioning: { takeNewRuns: 'always' },
        fleetGauges: kilnSettings().metricsAddr ? {} : undefined,
      })
    : undefined;
  return {
    address,
    uiUrl,
    client,
    worker,
    operator: deps.operator,
    ...(codecLogin ? { codecLogin } : {}),
    // each part is stopped even when one before it fails, and a failure is said, not thrown: the
    // work is done by now (a demo or an eval whose worker overran its shutdown grace under CI load
    // lost its report and exited 1)
    async stop() {
      const problems: string[] = [];
      const attempt = (what: string, p: Promise<unknown> | undefined) => p?.catch((err: unknown) => problems.push(`${what}: ${(err as Error).message}`));
      await attempt('the worker', worker?.shutdown());
      await attempt('the connection', connection.close());
      await attempt('the server', stopServer());
      if (problems.length) o.log?.(`warning: the embedded Temporal server and worker did not stop cleanly (${problems.join('; ')})`);
    },
  };
}
