/**
 * What activities need from the outside world, injected so tests can pass fakes and the worker
 * wires the real things once.
 */
import { hostname } from 'node:os';
import type { ModelClient } from '../model/index.js';
import { createModelClient } from '../model/index.js';
import { createSandbox } from '../sandbox/index.js';
import { registerKnownSecrets, secretEnvValues } from '../redact/index.js';
import type { Sandbox } from '../sandbox/types.js';
import { hostTaskQueue } from '../shared/constants.js';
import { crashPointsFromEnv, type CrashPoint } from '../testing-hooks.js';
import { operatorConfigFromEnv, type OperatorConfig } from '../policy/run-request.js';
import { settingsFrom } from '../settings.js';
import type { PolicyDecision } from '../policy/types.js';
import { McpServers } from './mcp-servers.js';
import type { BudgetLedgerPort } from './budget.js';

export interface ActivityDeps {
  /** this worker's host queue: activities touching a worktree are routed here */
  hostQueue: string;
  sandbox(mode: 'bwrap' | 'off'): Promise<Sandbox>;
  model(spec: string, runId: string): Promise<ModelClient>;
  crash(point: CrashPoint, key?: string | number): void;
  env: NodeJS.ProcessEnv;
  /** what this worker's operator lets a run request ask for (sandbox off…) */
  operator: OperatorConfig;
  /** the MCP servers this worker runs for its runs */
  mcp: McpServers;
  /** the budget ledger; absent: the tenant's ledger workflow through the worker's Temporal client */
  ledger?: BudgetLedgerPort;
}

/** What the tool activities share on one worker besides the outside world. */
export interface ToolDeps extends ActivityDeps {
  /** the policy decision of each call in flight, so its event line names the rule that let it run */
  decided: Map<string, PolicyDecision>;
}

/** Model clients kept (most recently used first out last): one per run in flight, or about. */
const MAX_MODEL_CLIENTS = 64;

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): ActivityDeps {
  // the worker's own secrets (API keys, tokens) are masked in everything it records
  registerKnownSecrets(secretEnvValues(env));
  const sandboxes = new Map<string, Promise<Sandbox>>();
  const models = new Map<string, Promise<ModelClient>>();
  return {
    hostQueue: hostTaskQueue(settingsFrom(env).host ?? hostname()),
    sandbox(mode) {
      let s = sandboxes.get(mode);
      if (!s) {
        s = createSandbox({ mode });
        // a failed probe is not cached: bubblewrap may be installed while the worker runs
        s.catch(() => sandboxes.delete(mode));
        sandboxes.set(mode, s);
      }
      return s;
    },
    model(spec, runId) {
      // one client per run, reused turn after turn; a failed one (no key yet) is made again next time
      const key = `${spec}\0${runId}`;
      let c = models.get(key);
      if (!c) {
        c = createModelClient({ spec, runId, env });
        c.catch(() => models.delete(key));
        if (models.size >= MAX_MODEL_CLIENTS) models.delete(models.keys().next().value!);
      } else models.delete(key);
      models.set(key, c);
      return c;
    },
    crash: crashPointsFromEnv(env),
    env,
    operator: operatorConfigFromEnv(env),
    mcp: new McpServers(),
  };
}
