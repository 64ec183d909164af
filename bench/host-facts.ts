/** The machine the figures come from, printed first: numbers without it cannot be compared. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { findTemporalCli } from '../src/temporal/binary.js';

export interface HostFacts {
  cores: number;
  cpu: string;
  memGb: number;
  node: string;
  os: string;
  loadavg: number[];
  temporalCli: string;
  git: string;
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim()
      .split('\n')[0]!;
  } catch {
    return 'not found';
  }
}

export function hostFacts(): HostFacts {
  const cli = findTemporalCli();
  return {
    cores: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
    temporalCli: cli ? `${version(cli, ['--version'])} (${cli})` : 'not found',
    git: version('git', ['--version']),
  };
}
