/** `kiln setup`: everything Kiln needs on this machine that npm does not install. */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { provisionTemporalCli } from '../../temporal/binary.js';
import { CliError } from '../../shared/errors.js';

const BWRAP_PATHS = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];

export async function runSetup(out: (s: string) => void): Promise<void> {
  await provisionTemporalCli({ log: out });
  if (BWRAP_PATHS.some((p) => existsSync(p))) {
    out('bubblewrap: present');
    return;
  }
  const isRoot = process.getuid?.() === 0;
  const hasApt = existsSync('/usr/bin/apt-get');
  if (!hasApt) {
    throw new CliError('bubblewrap (bwrap) is missing: install it with your package manager (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)');
  }
  const sudo = isRoot ? [] : ['sudo', '-n'];
  out('bubblewrap: installing with apt-get');
  const run = (args: string[]) => execa(sudo[0] ?? args[0]!, [...sudo.slice(1), ...(sudo.length ? args : args.slice(1))], { stdio: 'inherit', reject: false, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  await run(['apt-get', 'update', '-qq']);
  const res = await run(['apt-get', 'install', '-y', '-qq', 'bubblewrap']);
  if (res.exitCode !== 0 || !BWRAP_PATHS.some((p) => existsSync(p))) {
    throw new CliError('could not install bubblewrap: run `sudo apt-get install bubblewrap`, then `npm run setup` again');
  }
  out('bubblewrap: installed');
}
