/** `kiln setup`: everything Kiln needs on this machine that npm does not install. */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { provisionTemporalCli } from '../../temporal/binary.js';
import { CliError } from '../../shared/errors.js';

/**
 * Debian packages the sandbox uses, each with the binary that shows it is there: bubblewrap runs
 * every command; slirp4netns gives setup commands a network that cannot reach this machine's
 * loopback (without it, setup needing the network is refused); strace lets the verifier see which
 * files the checks reached (without it, verification falls back to judging by the base's files).
 */
const PACKAGES = [
  { pkg: 'bubblewrap', bin: 'bwrap' },
  { pkg: 'slirp4netns', bin: 'slirp4netns' },
  { pkg: 'strace', bin: 'strace' },
] as const;
const BIN_DIRS = ['/usr/bin', '/usr/local/bin', '/bin'];
const present = (bin: string) => BIN_DIRS.some((d) => existsSync(`${d}/${bin}`));

export async function runSetup(out: (s: string) => void): Promise<void> {
  await provisionTemporalCli({ log: out });
  const missing = PACKAGES.filter((p) => !present(p.bin));
  for (const p of PACKAGES) if (present(p.bin)) out(`${p.pkg}: present`);
  if (missing.length === 0) return;
  const names = missing.map((p) => p.pkg).join(' ');
  const isRoot = process.getuid?.() === 0;
  const hasApt = existsSync('/usr/bin/apt-get');
  if (!hasApt) {
    throw new CliError(`${names} missing: install with your package manager (Debian/Ubuntu: apt-get install ${names}; Fedora: dnf install ${names})`);
  }
  const sudo = isRoot ? [] : ['sudo', '-n'];
  out(`${names}: installing with apt-get`);
  const run = (args: string[]) =>
    execa(sudo[0] ?? args[0]!, [...sudo.slice(1), ...(sudo.length ? args : args.slice(1))], {
      stdio: 'inherit',
      reject: false,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  await run(['apt-get', 'update', '-qq']);
  const res = await run(['apt-get', 'install', '-y', '-qq', ...missing.map((p) => p.pkg)]);
  const still = missing.filter((p) => !present(p.bin));
  if (res.exitCode !== 0 || still.length > 0) {
    throw new CliError(`could not install ${still.map((p) => p.pkg).join(' ') || names}: run \`sudo apt-get install ${names}\`, then \`npm run setup\` again`);
  }
  out(`${names}: installed`);
}
