/**
 * `kiln trust [--repo DIR] [--revoke]`: let this repo's own configuration loosen what you allow
 * (its commands.allow, allowSensitive, unprotected paths, setup and checks), bound to the files
 * as they are now; any change to them needs `kiln trust` again.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { git } from '../../git/run.js';
import { describeRunSettings, loadRunSettings } from '../../policy/precedence.js';
import { kilnHomeDir, REPO_CONFIG_FILES, trustRepo, trustStorePath, untrustRepo } from '../../policy/trust.js';
import { UsageError } from '../../shared/errors.js';

export async function runTrust(o: { repo?: string; revoke?: boolean }, out: (s: string) => void): Promise<void> {
  const dir = resolve(o.repo ?? '.');
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`--repo ${o.repo ?? '.'}: no such directory`);
  let repo: string;
  try {
    repo = (await git(dir, ['rev-parse', '--show-toplevel'])).trim();
  } catch {
    throw new UsageError(`${dir}: not a git repository`);
  }
  const home = kilnHomeDir();
  if (o.revoke) {
    out(untrustRepo(repo, home) ? `${repo}: no longer trusted` : `${repo}: was not trusted`);
    return;
  }
  const present = REPO_CONFIG_FILES.filter((f) => existsSync(resolve(repo, f)));
  const hash = trustRepo(repo, home);
  out(`trusted ${repo} (${present.join(', ') || 'no configuration files'}; sha256 ${hash.slice(0, 16)}…, kept in ${trustStorePath(home)})`);
  out('any change to these files makes the repo untrusted again. With this trust a run uses:');
  for (const line of describeRunSettings(await loadRunSettings(repo, { home, approvalMode: 'default' }))) out(`  ${line}`);
}
