/**
 * `npm run bench`: Kiln's figures in one run — turn latency through Temporal vs the same tools
 * in process, workflow history per turn against the server's limits, search vs git grep,
 * redaction throughput and policy latency. Figures, not tests: nothing here passes or fails
 * on a number, but a run that does not complete as scripted stops the benchmark.
 *
 *   node dist/bench/run.js [--turns 100] [--search-files 50000] [--search-runs 5]
 *                          [--sandbox bwrap|off] [--json]
 *                          [--only side-by-side,checkpoint,turns,search,redaction,policy,checks,results,verify-real]
 *                          [--result-tests 50000]   (tests per suite in the results-parsing figures)
 *                          [--trials 5] [--sbs-turns 20] [--concurrent 50] [--harness 'name=command']...
 *                          [--think-ms 0]   (the mock thinks this long before each reply)
 *                          [--before OTHER/bin/kiln.js]   (another build timed beside this one)
 *                          [--no-pi]   (leave out pi, the anchor the side-by-side installs from npm once)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path, { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { hostFacts } from './host-facts.js';
import { benchPolicy } from './policy-latency.js';
import { benchRedaction } from './redaction.js';
import {
  checksSection,
  historySection,
  hostSection,
  policySection,
  redactionSection,
  searchSection,
  turnsSection,
  heading,
  verifyRealSection,
} from './report.js';
import { benchSearch } from './search.js';
import { benchTurns } from './turns.js';
import { benchChecks } from './checks.js';
import { benchVerifyReal } from './verify-real.js';
import { benchCheckpoint, checkpointSection } from './checkpoint.js';
import { benchResultsParsing, resultsParsingSection } from './results-parsing.js';
import { ensurePi, piHarness } from './pi-anchor.js';
import { benchSideBySide, sideBySideSection, type Harness } from './side-by-side.js';

export interface BenchArgs {
  turns: number;
  searchFiles: number;
  searchRuns: number;
  sandbox: 'bwrap' | 'off';
  json: boolean;
  only: Set<Section>;
  trials: number;
  sbsTurns: number;
  thinkMs: number;
  concurrent: number;
  resultTests: number;
  harnesses: Harness[];
  /** another build's bin/kiln.js, timed beside this one in the side-by-side trials */
  before?: string;
  /** pi as the side-by-side anchor (installed from npm once) */
  pi: boolean;
}

const SECTIONS = ['side-by-side', 'checkpoint', 'turns', 'search', 'redaction', 'policy', 'checks', 'results', 'verify-real'] as const;
type Section = (typeof SECTIONS)[number];

export function parseArgs(argv: string[]): BenchArgs {
  const args: BenchArgs = {
    turns: 100,
    searchFiles: 50_000,
    searchRuns: 5,
    sandbox: 'bwrap',
    json: false,
    only: new Set(SECTIONS),
    // the p95 of 3 trials (57 turns) is the third-slowest turn, and moved by one slow turn more or less; 5 steady it
    trials: 5,
    sbsTurns: 20,
    thinkMs: 0,
    concurrent: 50,
    resultTests: 50_000,
    harnesses: [],
    pi: true,
  };
  const num = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag} needs an integer ≥ ${min}, got ${v ?? 'nothing'}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') args.json = true;
    else if (a === '--no-pi') args.pi = false;
    else if (a === '--turns') args.turns = num(a, argv[++i], 2);
    else if (a === '--search-files') args.searchFiles = num(a, argv[++i], 1);
    else if (a === '--search-runs') args.searchRuns = num(a, argv[++i], 1);
    else if (a === '--trials') args.trials = num(a, argv[++i], 1);
    else if (a === '--sbs-turns') args.sbsTurns = num(a, argv[++i], 2);
    else if (a === '--think-ms') args.thinkMs = num(a, argv[++i], 0);
    else if (a === '--concurrent') args.concurrent = num(a, argv[++i], 0);
    else if (a === '--result-tests') args.resultTests = num(a, argv[++i], 1);
    else if (a === '--harness') {
      const v = argv[++i] ?? '';
      const eq = v.indexOf('=');
      if (eq < 1 || eq === v.length - 1) throw new Error(`--harness takes name=command (e.g. 'claude=claude -p "run echo"'), got ${v || 'nothing'}`);
      args.harnesses.push({ name: v.slice(0, eq), command: v.slice(eq + 1) });
    } else if (a === '--before') {
      const v = argv[++i];
      if (!v || !existsSync(v)) throw new Error(`--before takes another Kiln build's bin/kiln.js, got ${v ?? 'nothing'}${v ? ' (no such file)' : ''}`);
      args.before = path.resolve(v);
    } else if (a === '--only') {
      const names = (argv[++i] ?? '').split(',').filter(Boolean);
      const bad = names.find((n) => !(SECTIONS as readonly string[]).includes(n));
      if (!names.length || bad) throw new Error(`--only takes a comma-separated list of ${SECTIONS.join(', ')}${bad ? `; got ${bad}` : ''}`);
      args.only = new Set(names as Section[]);
    } else if (a === '--sandbox') {
      const v = argv[++i];
      if (v !== 'bwrap' && v !== 'off') throw new Error(`--sandbox takes bwrap or off, got ${v ?? 'nothing'}`);
      args.sandbox = v;
    } else
      throw new Error(
        `unknown option ${a}; options: --turns N --search-files N --search-runs N --sandbox bwrap|off --json --only SECTIONS --trials N --sbs-turns N --think-ms N --concurrent N --result-tests N --harness name=command --no-pi --before OTHER/bin/kiln.js`,
      );
  }
  return args;
}

function anchor(args: BenchArgs, log: (line: string) => void): Harness[] {
  if (!args.pi) return [];
  const pi = ensurePi();
  if ('bin' in pi) return [piHarness(pi.bin)];
  log(`  no pi anchor this time (${pi.missing}); --no-pi skips it`);
  return [];
}

export async function runBench(args: BenchArgs, print: (line: string) => void): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const progress = (line: string) => print(line);
  const host = hostFacts();
  hostSection(host).forEach(print);

  print(heading('Running'));
  const want = (x: Section) => args.only.has(x);
  const tmp = mkdtempSync(join(os.tmpdir(), 'kiln-bench-'));
  const out: string[][] = [];
  const result: Record<string, unknown> = { host };
  try {
    // whoever runs the bench with --sandbox off is its workers' operator, and said so
    if (args.sandbox === 'off') process.env.KILN_ALLOW_SANDBOX_OFF = '1';
    if (want('side-by-side')) {
      progress(`side by side: ${args.sbsTurns} turns × ${args.trials} trials against the mock, then ${args.concurrent} runs at once`);
      const sbs = await benchSideBySide({
        tmp,
        turns: args.sbsTurns,
        trials: args.trials,
        harnesses: [...anchor(args, progress), ...args.harnesses],
        fifty: args.concurrent,
        sandbox: args.sandbox,
        before: args.before,
        thinkMs: args.thinkMs,
        log: progress,
      });
      out.push(sideBySideSection(sbs, heading));
      result.sideBySide = sbs;
    }
    if (want('checkpoint')) {
      progress(`checkpoint and worktree: ${args.searchFiles} files`);
      const c = await benchCheckpoint({ files: args.searchFiles, runs: args.searchRuns, log: (l) => progress(`  ${l}`) });
      out.push(checkpointSection(c, heading));
      result.checkpoint = c;
    }
    if (want('turns')) {
      progress(`turns: ${args.turns} through Temporal, then in process`);
      const turns = await benchTurns({ turns: args.turns, sandbox: args.sandbox, log: progress });
      out.push(turnsSection(turns), historySection(turns));
      const { history, ...turnFigures } = turns;
      Object.assign(result, { turns: turnFigures, history });
    }
    if (want('search')) {
      progress(`search: ${args.searchFiles} files, ${args.searchRuns} runs a pattern`);
      const search = await benchSearch({ files: args.searchFiles, runs: args.searchRuns, log: (l) => progress(`  ${l}`) });
      out.push(searchSection(search));
      result.search = search;
    }
    if (want('redaction')) {
      const redaction = benchRedaction();
      out.push(redactionSection(redaction));
      result.redaction = redaction;
    }
    if (want('policy')) {
      const policy = await benchPolicy();
      out.push(policySection(policy));
      result.policy = policy;
    }
    if (want('checks')) {
      progress('checks: a Go and a Node repo, direct vs sandboxed (cold and warm cache)');
      const checks = await benchChecks({ sandbox: args.sandbox, log: progress });
      out.push(checksSection(checks));
      result.checks = checks;
    }
    if (want('verify-real')) {
      progress('verify-real: real libraries (examples/eval-real, fetched once), their checks untraced and as the verifier runs them');
      const rows = await benchVerifyReal({ sandbox: args.sandbox, log: progress });
      out.push(verifyRealSection(rows));
      result.verifyReal = rows;
    }
    if (want('results')) {
      progress(`results: parse and judge ${args.resultTests} tests per suite, JUnit and text`);
      const results = benchResultsParsing({ tests: args.resultTests, runs: 3, log: progress });
      out.push(resultsParsingSection(results, heading));
      result.resultsParsing = results;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const totalS = Math.round((performance.now() - t0) / 100) / 10;

  out.flat().forEach(print);
  // other work on the machine moves every figure: the load at the end says how much there was
  const loadavgEnd = os.loadavg().map((l) => Math.round(l * 100) / 100);
  print(`\nbench finished in ${totalS} s; load avg at the end ${loadavgEnd.join(' / ')} on ${host.cores} cores`);
  return { ...result, totalS, loadavgEnd };
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
