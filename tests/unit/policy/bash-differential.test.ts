import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/tools/evaluate.js';
import { tempRepo, type TempRepo } from './helpers.js';

/*
 * The parser against bash itself: each text below makes the real bash run `touch M`, in ways a
 * parser can miss (a subscript or arithmetic that evaluates a value again, a quoted name a
 * builtin evaluates, re-parsed array values, backticks). Where the policy did not see `touch`
 * among the commands it judged, it must not have allowed the text: what it does not model, it
 * asks about.
 */

let repo: TempRepo;
beforeAll(() => {
  repo = tempRepo();
  repo.file('f', 'a[$(touch M)]\n');
});
afterAll(() => repo.cleanup());

const judge = (command: string) => evaluate('run_command', { command, reason: 'r' }, repo.ctx());

function bashRuns(command: string): boolean {
  const marker = join(repo.dir, 'M');
  rmSync(marker, { force: true });
  try {
    execFileSync('bash', ['-c', command], { cwd: repo.dir, stdio: 'ignore', timeout: 5_000 });
  } catch {
    // a failing command may still have run the marker first
  }
  return existsSync(marker);
}

const RUNS_A_PROGRAM = [
  "declare -a 'a=($(touch M))'",
  "declare 'a[$(touch M)]=1'",
  "printf -v 'a[$(touch M)]' x",
  "read 'a[$(touch M)]' <<< x",
  "x='a[$(touch M)]'; echo $((x))",
  "x='a[$(touch M)]'; [[ $x -eq 1 ]]",
  "test -v 'a[$(touch M)]'",
  '[[ -v a[$(touch M)] ]]',
  "unset 'a[$(touch M)]'",
  "let 'a[$(touch M)]=1'",
  "x='a[$(touch M)]'; ((x))",
  "x='a[$(touch M)]'; echo ${y:x}",
  "x='a[$(touch M)]'; echo ${a[x]}",
  "x='a[$(touch M)]'; b[x]=1",
  "x='a[$(touch M)]'; test $x -eq 1",
  "x='a[$(touch M)]'; [ $x -gt 1 ]",
  "export 'a[$(touch M)]'",
  "local 'a[$(touch M)]'=1",
  "readonly 'a[$(touch M)]'",
  "x='a[$(touch M)]'; for ((i=x;0;)); do :; done",
  "x='$(touch M)'; declare -n r=x; echo $r",
  "mapfile -t 'a[$(touch M)]' < /dev/null",
  "getopts a 'a[$(touch M)]'",
  "printf '%(%s)T' 'a[$(touch M)]'",
  "x='a[$(touch M)]'; echo $((x+1))",
  "x='a[$(touch M)]'; let y=x",
  "x='a[$(touch M)]'; declare -i y=x",
  "x='a[$(touch M)]'; shift x",
  "x='a[$(touch M)]'; echo ${@:x}",
  "x='a[$(touch M)]'; exit x",
  "x='a[$(touch M)]'; return x 2>/dev/null",
  "x='a[$(touch M)]'; ulimit x 2>/dev/null",
];

/** Values read from a file (which holds `a[$(touch M)]`) or output, then evaluated as arithmetic. */
const EVALUATES_A_FILE = [
  'read x < f; echo $((x))',
  'x=$(cat f); [[ $x -eq 1 ]]',
  'while read x; do echo $((x)); done < f',
  'read -r x < f; y=$((x + 1))',
  'x=$(cat f); (( x ))',
];

/** Lookalikes that evaluate nothing a run controls: still allowed. */
const CONTROLS = [
  'for ((i=0;i<3;i++)); do echo $i; done',
  'x=3; echo $((x*2))',
  "x='a[b]'; echo $((x))",
  'read x < f; [[ $x == y ]]',
  "echo '$(touch M)'",
  "printf '%s\\n' '$(touch M)'",
];

describe('where bash and the parser could disagree, the policy does not allow', () => {
  it('every text that makes bash run a program the policy did not see is asked about or refused', async () => {
    const missed: string[] = [];
    let ran = 0;
    for (const command of [...RUNS_A_PROGRAM, ...EVALUATES_A_FILE]) {
      if (!bashRuns(command)) continue;
      ran++;
      const d = await judge(command);
      const saw = (d.segments ?? []).some((s) => s.argv[0] === 'touch');
      if (!saw && d.decision === 'allow') missed.push(command);
    }
    // the table is about texts that do run the program; most of them must
    expect(ran).toBeGreaterThan(20);
    expect(missed).toEqual([]);
  });

  it('a value read from a file and used as arithmetic is asked about, with the variable named', async () => {
    for (const command of EVALUATES_A_FILE) {
      expect(bashRuns(command), command).toBe(true);
      expect(await judge(command), command).toMatchObject({ decision: 'ask', rule: 'command.reevaluated' });
    }
    expect((await judge('read x < f; echo $((x))')).reason).toContain('$x');
  });

  it('the controls run nothing and are allowed', async () => {
    for (const command of CONTROLS) {
      expect(bashRuns(command), command).toBe(false);
      expect((await judge(command)).decision, command).toBe('allow');
    }
  });
});
