/**
 * `npm run bench`: Kiln's figures in one run — turn latency through Temporal vs the same tools
 * in process, workflow history per turn against the server's limits, search vs git grep,
 * redaction throughput and policy latency. Figures, not tests: nothing here passes or fails
 * on a number, but a run that does not complete as scripted stops the benchmark.
 *
 *   node dist/bench/run.js [--turns 100] [--search-files 50000] [--search-runs 5]
 *                          [--sandbox bwrap|off] [--json]
 */
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { hostFacts } from './host-facts.js';
import { benchPolicy } from './policy-latency.js';
import { benchRedaction } from './redaction.js';
import { checksSection, historySection, hostSection, policySection, redactionSection, searchSection, turnsSection, heading } from './report.js';
import { benchSearch } from './search.js';
import { benchTurns } from './turns.js';
import { benchChecks } from './checks.js';

export interface BenchArgs {
  turns: number;
  searchFiles: number;
  searchRuns: number;
  sandbox: 'bwrap' | 'off';
  json: boolean;
}

export function parseArgs(argv: string[]): BenchArgs {
  const args: BenchArgs = { turns: 100, searchFiles: 50_000, searchRuns: 5, sandbox: 'bwrap', json: false };
  const num = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag} needs an integer ≥ ${min}, got ${v ?? 'nothing'}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') args.json = true;
    else if (a === '--turns') args.turns = num(a, argv[++i], 2);
    else if (a === '--search-files') args.searchFiles = num(a, argv[++i], 1);
    else if (a === '--search-runs') args.searchRuns = num(a, argv[++i], 1);
    else if (a === '--sandbox') {
      const v = argv[++i];
      if (v !== 'bwrap' && v !== 'off') throw new Error(`--sandbox takes bwrap or off, got ${v ?? 'nothing'}`);
      args.sandbox = v;
    } else throw new Error(`unknown option ${a}; options: --turns N --search-files N --search-runs N --sandbox bwrap|off --json`);
  }
  return args;
}

export async function runBench(args: BenchArgs, print: (line: string) => void): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const progress = (line: string) => print(line);
  const host = hostFacts();
  hostSection(host).forEach(print);

  print(heading('Running'));
  progress(`turns: ${args.turns} through Temporal, then in process`);
  // whoever runs the bench with --sandbox off is its workers' operator, and said so
  if (args.sandbox === 'off') process.env.KILN_ALLOW_SANDBOX_OFF = '1';
  const turns = await benchTurns({ turns: args.turns, sandbox: args.sandbox, log: progress });
  progress(`search: ${args.searchFiles} files, ${args.searchRuns} runs a pattern`);
  const search = await benchSearch({ files: args.searchFiles, runs: args.searchRuns, log: (l) => progress(`  ${l}`) });
  progress('redaction and policy');
  const redaction = benchRedaction();
  const policy = await benchPolicy();
  progress('checks: a Go and a Node repo, direct vs sandboxed (cold and warm cache)');
  const checks = await benchChecks({ sandbox: args.sandbox, log: progress });
  const totalS = Math.round((performance.now() - t0) / 100) / 10;

  [turnsSection(turns), historySection(turns), searchSection(search), redactionSection(redaction), policySection(policy), checksSection(checks)].flat().forEach(print);
  // other work on the machine moves every figure: the load at the end says how much there was
  const loadavgEnd = os.loadavg().map((l) => Math.round(l * 100) / 100);
  print(`\nbench finished in ${totalS} s; load avg at the end ${loadavgEnd.join(' / ')} on ${host.cores} cores`);
  const { history, ...turnFigures } = turns;
  return { host, turns: turnFigures, history, search, redaction, policy, checks, totalS, loadavgEnd };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  let args: BenchArgs;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n`);
    process.exit(2);
  }
  try {
    const result = await runBench(args, (l) => process.stdout.write(l + '\n'));
    if (args.json) process.stdout.write(JSON.stringify(result) + '\n');
    process.exit(0);
  } catch (err) {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  }
}
