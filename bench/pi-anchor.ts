/**
 * pi (npm @mariozechner/pi-coding-agent) as the side-by-side anchor: the fastest harness measured
 * on the project's machines, so Kiln's per-turn figure is read against it rather than alone.
 * Installed once from the npm registry into Kiln's cache; a bench that cannot install it goes on
 * without the anchor and says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { kilnCacheHome } from '../src/checks/caches.js';
import type { Harness } from './side-by-side.js';

export const PI_VERSION = '0.73.1';
const PACKAGE = '@mariozechner/pi-coding-agent';

/** the pi binary, installing it first if needed; a reason when it cannot be had */
export function ensurePi(): { bin: string } | { missing: string } {
  const dir = join(kilnCacheHome(), 'bench', `pi-${PI_VERSION}`);
  const bin = join(dir, 'node_modules', '.bin', 'pi');
  if (existsSync(bin)) return { bin };
  mkdirSync(dir, { recursive: true });
  const res = spawnSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--no-save', `${PACKAGE}@${PI_VERSION}`], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (res.status === 0 && existsSync(bin)) return { bin };
  const why = (res.error?.message ?? res.stderr ?? '').trim().split('\n').slice(-1)[0];
  return { missing: `npm install ${PACKAGE}@${PI_VERSION} failed: ${why || `exit ${res.status}`}` };
}

/**
 * pi reads its provider's base URL from models.json in its agent directory, not from
 * ANTHROPIC_BASE_URL: the command writes one per trial from the URL the bench sets, in the
 * trial's own clone, so nothing of the user's ~/.pi is read or changed.
 */
export function piHarness(bin: string): Harness {
  const agentDir = '"$PWD/.pi-agent"';
  const models = `{"providers":{"anthropic":{"baseUrl":"'"$ANTHROPIC_BASE_URL"'"}}}`;
  return {
    name: `pi ${PI_VERSION}`,
    command: [
      `mkdir -p ${agentDir}`,
      `printf '%s' '${models}' > ${agentDir}/models.json`,
      `PI_CODING_AGENT_DIR=${agentDir} ${JSON.stringify(bin)} -p --no-session --provider anthropic --model claude-sonnet-4-5 "Run the shell commands you are asked for until you are done."`,
    ].join(' && '),
  };
}
