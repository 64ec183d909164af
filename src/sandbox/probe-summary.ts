import type { ProbeCheck, ProbeResult } from './probe.js';

/** How each guarantee the probe proved reads in the worker's one start-up line. */
const SAID: Record<string, string> = {
  'write outside the worktree fails': 'only the worktree writable',
  'files under HOME are hidden': 'HOME hidden',
  "the user's main checkout is hidden": 'main checkout hidden',
  'host files others may not read are hidden': 'only allowlisted system dirs, private host files hidden',
  'sensitive files in the worktree are masked': 'secrets in the worktree masked',
  'unprivileged user': 'unprivileged user in a user namespace',
  'kernel keyring is not shared': 'keyring not shared',
  'network is unreachable': 'no network',
  "setup network does not reach the host's loopback": "setup network without the host's loopback",
};

/** The control (a write inside must work) and the inventories are not guarantees to list. */
const NOT_SAID = new Set(['write inside the worktree succeeds', 'toolchains']);

function phrase(c: ProbeCheck): string {
  if (!c.ok) return `FAILED ${c.name}: ${c.detail}`;
  // what the host did not allow is said as the probe found it, never as a guarantee
  if (/^NOT\b/.test(c.detail) || /^setup commands needing the network are refused/.test(c.detail)) return `${c.name}: ${c.detail}`;
  const said = SAID[c.name] ?? c.name;
  return /^not tested/.test(c.detail) ? `${said} (not tested: ${c.detail.replace(/^not tested:\s*/, '')})` : said;
}

/** The worker's start-up line, from what this host's probe actually proved. */
export function probeSummary(probe: ProbeResult): string {
  const checks = probe.checks.filter((c) => !NOT_SAID.has(c.name));
  const limits = checks.find((c) => c.name === 'limits');
  const guarantees = checks.filter((c) => c !== limits).map(phrase);
  const head = probe.ok ? 'sandbox: bubblewrap probe passed' : 'sandbox: bubblewrap probe FAILED';
  return `${head} — ${guarantees.join('; ')}${limits ? `; limits: ${limits.detail}` : ''}`;
}
