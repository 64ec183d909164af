import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { judgeCommandRead, judgeCommandWrite } from './files.js';
import { globTargetsSensitive, isSensitivePath } from './globs.js';
import { expandGlob, GlobBudget, GLOB_BUDGET_MS, GLOB_MAX_MATCHES } from './glob-expand.js';
import { physicalPath } from './paths.js';
import { lit, parseShell, ShellParseError, ShellTooComplexError, type ShellCommand, type Word } from '../shell/parse.js';
import type { CommandSegment, PolicyContext } from './types.js';
import { allow, ask, deny, mostSevere, type Verdict } from './verdict.js';
import { judgeProgram } from './programs.js';
import type { ProgramJudge, ProgramResult } from './program-parts.js';
import { assignmentName, judgeAssignment } from './environment.js';
import { optionHits, PROGRAM_OPTIONS } from './program-options.js';
import { obfuscation, isDecoder } from './obfuscation.js';

export interface CommandJudgement {
  verdict: Verdict;
  segments: CommandSegment[];
}

// modules of the interpreters' own standard libraries that only add functions (no network, no exec)
const SAFE_MODULES =
  /^(?:strict|warnings|utf8|feature|English|POSIX|Data::Dumper|JSON::PP|List::Util|Scalar::Util|File::Basename|File::Spec|Getopt::Long|Time::HiRes|json|yaml|set|pp|time|date|csv|pathname|securerandom|digest|erb|optparse|fileutils)(?:=\S*)?$/;

// bash -c inside bash -c inside ...: deeper than this is not a command anyone writes by hand
const MAX_NESTING = 4;

/** Substitution syntax as plain text: harmless to print, code once bash evaluates the text again. */
const CODE_IN_TEXT = /\$[({[]|`|[<>]\(/;
/** Builtins that take variable names, subscripts or arithmetic as arguments and evaluate them. */
const EVALUATING_BUILTINS = new Set([
  'declare',
  'typeset',
  'local',
  'export',
  'readonly',
  'let',
  'unset',
  'printf',
  'read',
  'mapfile',
  'readarray',
  'test',
  '[',
  'getopts',
]);
/** Builtins whose operands name variables they fill with text from input. */
const FILLING_BUILTINS = new Set(['read', 'mapfile', 'readarray']);

function words(text: string): string[] {
  return text.trim().split(/\s+/).filter(Boolean);
}

/** `npm install` for `npm install left-pad`: the program and, where it has them, its subcommand. */
export function grantKeyFor(argv: readonly string[]): string {
  const [prog = '', sub] = argv;
  const base = prog.split('/').pop() ?? prog;
  const hasSub = /^(npm|pnpm|yarn|npx|pip3?|uv|poetry|git|cargo|go|docker|podman|apt|apt-get|brew|gem|bundle|kubectl|make|python3?|node|deno|bun)$/.test(base);
  return `run_command:${hasSub && sub && !sub.startsWith('-') ? `${base} ${sub}` : base}`;
}

/** A `commands.allow|ask|deny` rule (and an approvals.twoPerson `command:` rule) against one parsed segment. */
export function matchesRule(rule: string, argv: readonly string[]): boolean {
  const joined = argv.join(' ');
  const r = rule.trim();
  if (/[*?]/.test(r)) {
    const re = new RegExp(
      '^' +
        r
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.') +
        '$',
    );
    return re.test(joined);
  }
  const rw = words(r).join(' ');
  return joined === rw || joined.startsWith(rw + ' ');
}

class CommandJudge implements ProgramJudge {
  readonly segments: CommandSegment[] = [];
  readonly verdicts: Verdict[] = [];
  cwd: string;
  cwdKnown = true;
  readonly home: string;
  readonly functions = new Set<string>();
  /** shell variables with values known before the command runs (`X=a`, `for X in a b`) */
  private readonly vars = new Map<string, Word[]>();
  private pipedFrom: ShellCommand | undefined;
  /** the commands whose output flows, through pipes, into the one being judged */
  upstream: ShellCommand[] = [];
  /** files an earlier part of this command writes (absolute path → content, when it is known) */
  readonly written = new Map<string, string | undefined>();
  private writing: string | undefined;
  private readonly checkArgvs: string[];
  /** what this command's globs may still list */
  private readonly globBudget = new GlobBudget();
  /** variables read as arithmetic anywhere in the command */
  private readonly evaluated = new Set<string>();
  /** variables the command fills with values only known when it runs */
  private readonly unknownValues = new Set<string>();
  private reevaluationAsked = false;

  constructor(readonly ctx: PolicyContext) {
    this.cwd = physicalPath(ctx.workspace) ?? resolve(ctx.workspace);
    this.home = ctx.home ?? homedir();
    this.checkArgvs = ctx.checks.map((c) => words(c).join(' '));
  }

  async script(src: string, via: string[], depth: number): Promise<void> {
    if (depth > MAX_NESTING) {
      this.verdicts.push(ask('command.too-nested', 'The command nests shells too deeply to judge; run the inner command directly.'));
      return;
    }
    let cmds: ShellCommand[];
    try {
      cmds = await parseShell(src, via);
    } catch (e) {
      if (!(e instanceof ShellParseError)) throw e;
      if (e instanceof ShellTooComplexError)
        this.verdicts.push(
          deny('command.too-complex', `The command is too large to judge: ${e.message}. Split it into smaller commands, or write the script to a file.`),
        );
      else if (e.syntax) {
        const where = depth > 0 ? `The shell code passed to ${via[via.length - 1]} does not parse` : 'The command does not parse as shell';
        this.verdicts.push(deny('command.parse-error', `${where} (${e.message}); fix the quoting or split it up.`));
      } else
        this.verdicts.push(ask('command.unsupported-syntax', `Kiln cannot see which programs this shell code runs (${e.message}); a person must read it.`));
      return;
    }
    let prev: ShellCommand | undefined;
    let pipe: ShellCommand[] = [];
    for (const c of cmds) {
      if (c.via.length !== via.length) {
        this.upstream = [];
        await this.command(c, depth, undefined);
        continue;
      }
      pipe = prev?.pipedTo ? [...pipe, prev] : [];
      this.upstream = pipe;
      await this.command(c, depth, prev?.pipedTo ? prev : undefined);
      prev = c;
    }
    this.forkBombs(cmds);
    this.reevaluation();
  }

  /** What bash evaluates twice: a value read from a file or output, then used as arithmetic. */
  private reevaluation(): void {
    if (this.reevaluationAsked) return;
    const name = [...this.evaluated].find((n) => this.unknownValues.has(n));
    if (!name) return;
    this.reevaluationAsked = true;
    this.verdicts.push(
      ask(
        'command.reevaluated',
        `The command uses $${name}, whose value is only known when it runs, as arithmetic or a subscript: bash evaluates such a value again, and a subscript in it runs commands. A person must read it.`,
      ),
    );
  }

  /** The ways a simple command sets variables or hands bash text it evaluates again as code. */
  private tracksValues(c: ShellCommand): Verdict | undefined {
    for (const n of c.evaluates ?? []) this.evaluated.add(n);
    const code = (w: Word) => !w.dynamic && CODE_IN_TEXT.test(w.value);
    const asks = (w: Word) =>
      ask(
        'command.reevaluated',
        `${JSON.stringify(w.value.slice(0, 60))} is shell code written as plain text where bash may evaluate it again (a subscript, arithmetic or an array value); a person must read it.`,
      );
    if (c.binds) {
      if (c.binds.words.some((w) => w.dynamic || w.glob)) this.unknownValues.add(c.binds.name);
      const hidden = c.binds.words.find(code);
      return hidden && asks(hidden);
    }
    for (const a of c.assigns) {
      const name = assignmentName(a.value);
      if (name && a.dynamic) this.unknownValues.add(name);
      if (code(a)) return asks(a);
    }
    const prog = c.words[0]?.value;
    if (!prog || !EVALUATING_BUILTINS.has(prog)) return undefined;
    const args = c.words.slice(1);
    for (const w of args) {
      const name = assignmentName(w.value);
      if (name && w.dynamic) this.unknownValues.add(name);
    }
    if (FILLING_BUILTINS.has(prog)) for (const w of args) if (!w.value.startsWith('-')) this.unknownValues.add(w.value);
    const v = prog === 'printf' ? args.findIndex((w) => w.value === '-v') : -1;
    if (v >= 0 && args[v + 1]) this.unknownValues.add(args[v + 1]!.value);
    // printf's format and values are text it prints; only its -v name is evaluated
    const evaluatedArgs = prog === 'printf' ? (v >= 0 && args[v + 1] ? [args[v + 1]!] : []) : args;
    const hidden = evaluatedArgs.find(code);
    return hidden && asks(hidden);
  }

  private forkBombs(cmds: ShellCommand[]): void {
    for (const c of cmds) {
      const name = c.words[0]?.value;
      if (name && this.functions.has(name) && (c.pipedTo || c.background)) {
        this.verdicts.push(deny('command.fork-bomb', `The function ${name} calls itself in the background or through a pipe: a fork bomb shape.`));
        return;
      }
    }
  }

  /** A path argument as an absolute path, or null when it depends on runtime values. */
  pathOf(w: Word): string | null {
    let v = w.value;
    if (w.dynamic) {
      const m = /^\$(?:\{(HOME|PWD)\}|(HOME|PWD))(?![A-Za-z0-9_])/.exec(v);
      if (!m) return null;
      const rest = v.slice(m[0].length);
      if (rest.includes('$') || rest.includes('`')) return null;
      v = ((m[1] ?? m[2]) === 'HOME' ? this.home : this.cwd) + rest;
    } else if (w.tilde) {
      const m = /^~([^/]*)(.*)$/.exec(v);
      if (m) v = (m[1] ? join(dirname(this.home), m[1]) : this.home) + m[2];
    }
    if (!isAbsolute(v) && !this.cwdKnown) return null;
    return resolve(this.cwd, v);
  }

  /** `$f` where f was bound earlier in the command: each value it can take */
  private bound(w: Word): Word[] {
    if (!w.dynamic) return [w];
    const m = /^\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))([^$`]*)$/s.exec(w.value);
    const values = m ? this.vars.get((m[1] ?? m[2])!) : undefined;
    if (!m || !values) return [w];
    return values.map((b) => ({ ...b, value: b.value + m[3], raw: b.raw + m[3] }));
  }

  private paths(ws: readonly Word[], judge: (shown: string, abs: string) => Verdict, what: string): Verdict[] {
    const out: Verdict[] = [];
    for (const w of ws.flatMap((x) => this.bound(x))) {
      if (w.fromFind) {
        out.push(
          what === 'reads'
            ? allow('command.path', 'The paths come from find inside the roots it was given.', true)
            : ask('command.dynamic-path', `The command ${what} the files find lists, only known when it runs; a person must check them.`),
        );
        continue;
      }
      const abs = this.pathOf(w);
      if (abs === null) {
        out.push(ask('command.dynamic-path', `The command ${what} ${w.value}, a path only known when it runs; a person must check it.`));
        continue;
      }
      if (w.glob) {
        if (globTargetsSensitive(w.value, this.ctx.config)) {
          out.push(deny('command.sensitive-path', `The command ${what} ${w.value}, which matches files that may hold credentials.`));
          continue;
        }
        const found = expandGlob(abs, this.cwdRoot, this.globBudget);
        if (found.kind === 'too-broad') {
          out.push(
            ask(
              'command.glob-too-broad',
              `The command ${what} ${w.value}, a pattern that matches more files than Kiln checks one by one (${GLOB_MAX_MATCHES}, or ${GLOB_BUDGET_MS} ms of listing); a person must check it, or name the files.`,
            ),
          );
        } else if (found.kind === 'outside') {
          // judged as the pattern the command wrote: the host's files outside the worktree are never listed or named
          out.push(judge(w.value, abs));
        } else {
          for (const p of found.paths) out.push(judge(p === abs ? w.value : relative(this.cwd, p) || '.', p));
        }
        continue;
      }
      out.push(judge(w.value, abs));
    }
    return out;
  }

  readPaths(ws: readonly Word[]): Verdict[] {
    return this.paths(ws, (s, a) => judgeCommandRead(this.ctx, s, a), 'reads');
  }

  writePaths(ws: readonly Word[]): Verdict[] {
    return this.paths(
      ws,
      (s, a) => {
        if (!this.written.has(a) || this.writing !== undefined) this.written.set(a, this.writing);
        const rel = relative(this.cwdRoot, a);
        // a program dropped into node_modules/.bin shadows the tool every check runs
        if (/(^|\/)node_modules\/\.bin(\/|$)/.test(rel) && !rel.startsWith('..')) {
          return deny('command.fake-binary', `The command writes ${s}, where npm looks up the tools the checks run; Kiln never lets a command replace them.`);
        }
        return judgeCommandWrite(this.ctx, s, a);
      },
      'writes',
    );
  }

  private get cwdRoot(): string {
    return physicalPath(this.ctx.workspace) ?? resolve(this.ctx.workspace);
  }

  /**
   * Running a file this run wrote (before this command, or earlier in it): the file's content
   * goes into the approval, since no rule can judge a script it has not read.
   */
  runsWritten(w: Word, how: string): Verdict | null {
    const abs = this.pathOf(w);
    if (abs === null) return null;
    const root = this.cwdRoot;
    const rel = relative(root, abs);
    let content: string | undefined;
    if (this.written.has(abs)) content = this.written.get(abs);
    else if ((this.ctx.changedFiles ?? []).includes(rel)) {
      try {
        content = readFileSync(abs, 'utf8');
      } catch {
        content = undefined;
      }
    } else return null;
    const shown =
      content === undefined
        ? '(content not known until it runs)'
        : content.length > 2000
          ? `${content.slice(0, 2000)}\n… (${content.length - 2000} more characters)`
          : content;
    return ask('command.run-written', `${how} runs ${rel.startsWith('..') ? abs : rel}, which this run wrote; a person must read it first:\n${shown}`);
  }

  /** Any static argument naming a credentials file, in any spelling: `.env`, `--file=.env`, `HEAD:.env`. */
  sensitiveArgs(ws: readonly Word[]): Verdict[] {
    const out: Verdict[] = [];
    for (const w of ws) {
      if (w.dynamic) continue;
      const forms = [w.value];
      const eq = w.value.indexOf('=');
      if (eq > 0) forms.push(w.value.slice(eq + 1));
      const colon = w.value.indexOf(':');
      if (colon > 0 && !w.value.includes('://')) forms.push(w.value.slice(colon + 1));
      for (const f of forms) {
        if (!f || f.startsWith('-')) continue;
        const abs = this.pathOf({ ...w, value: f, tilde: f.startsWith('~') });
        const hit =
          (w.glob && globTargetsSensitive(f, this.ctx.config)) ||
          (abs !== null && judgeCommandRead(this.ctx, f, abs).rule === 'command.sensitive-path') ||
          isSensitivePath(f, this.ctx.config);
        if (hit) {
          out.push(deny('command.sensitive-path', `The command names ${f}, which may hold credentials.`));
          break;
        }
      }
    }
    return out;
  }

  cd(w: Word | undefined): Verdict {
    if (!w) {
      this.cwd = this.home;
      return ask('command.outside-path', 'cd without a directory goes to the home directory, outside the repository.', 'run_command:cd');
    }
    const abs = this.pathOf(w);
    if (abs === null || w.value === '-') {
      this.cwdKnown = false;
      return allow('command.cd', 'cd changes the directory for the commands after it.');
    }
    this.cwd = physicalPath(abs) ?? abs;
    const v = judgeCommandRead(this.ctx, w.value, abs);
    if (v.decision !== 'allow')
      return ask('command.outside-path', `cd ${w.value} leaves the repository; the commands after it would work outside.`, 'run_command:cd');
    return allow('command.cd', 'cd changes the directory for the commands after it.', true);
  }

  nested(src: string, via: string[], depth: number): Promise<void> {
    return this.script(src, via, depth + 1);
  }

  private redirects(c: ShellCommand): { verdicts: Verdict[]; stdin?: string } {
    const verdicts: Verdict[] = [];
    let stdin: string | undefined;
    for (const r of c.redirects) {
      const t = r.target;
      if (r.op === '<<' || r.op === '<<-') {
        stdin = r.heredoc ?? '';
        continue;
      }
      if (r.op === '<<<') {
        stdin = t.value;
        continue;
      }
      if ((r.op === '>&' || r.op === '<&') && /^(\d+-?|-)$/.test(t.value)) continue;
      if (r.op === '<') verdicts.push(...this.readPaths([t]));
      else verdicts.push(...this.writePaths([t]));
    }
    return stdin === undefined ? { verdicts } : { verdicts, stdin };
  }

  private async command(c: ShellCommand, depth: number, pipedFrom: ShellCommand | undefined): Promise<void> {
    const reevaluated = this.tracksValues(c);
    if (reevaluated) this.verdicts.push(reevaluated);
    if (c.binds) {
      this.vars.set(c.binds.name, c.binds.words);
      return;
    }
    if (c.words.length === 0) {
      for (const a of c.assigns) {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(a.value);
        if (!m) continue;
        if (a.dynamic) this.vars.delete(m[1]!);
        else this.vars.set(m[1]!, [{ ...a, value: m[2]!, raw: m[2]! }]);
      }
    }
    this.pipedFrom = pipedFrom;
    const redirectsText = c.redirects.map((r) => `${r.fd ?? ''}${r.op}${r.op.startsWith('<<') && r.op !== '<<<' ? r.target.value : ' ' + r.target.value}`);
    if (c.defines !== undefined) {
      this.functions.add(c.defines);
      this.segments.push({ argv: [], text: c.text, ...(c.via.length ? { via: c.via } : {}) });
      this.verdicts.push(ask('command.function-def', `The command defines the shell function ${c.defines}; a person must read it.`, 'run_command:function'));
      return;
    }
    this.writing = contentOf(c);
    const { verdicts: redirectVerdicts, stdin } = this.redirects(c);
    this.writing = undefined;
    const how = c.words.length ? 'prefix' : 'assignment';
    for (const a of c.assigns) {
      const v = judgeAssignment(a.value, a.dynamic, how, this.cwdRoot);
      if (v) redirectVerdicts.push(v);
    }
    const hidden = obfuscation(c);
    if (hidden) {
      // nothing else about the command matters: the reason must say it was hidden
      this.segments.push({ argv: c.words.map((w) => w.value), text: c.text, ...(c.via.length ? { via: c.via } : {}) });
      this.verdicts.push(deny('command.obfuscated', hidden));
      return;
    }
    const into = c.via[c.via.length - 1];
    if ((into === '$(...)' || into === '`...`') && !c.pipedTo && isDecoder(c.words.map((w) => w.value))) {
      redirectVerdicts.push(deny('command.obfuscated', `${c.words[0]?.value} decodes text into a command substitution: what runs is hidden until it runs.`));
    }
    await this.argv(c.words, c, c.via, depth, redirectVerdicts, stdin, redirectsText);
  }

  /** Exec-, write-, directory- and network-capable options, as the program's table lists them. */
  private options(name: string, args: string[], table: (typeof PROGRAM_OPTIONS)[string]): Verdict[] {
    const out: Verdict[] = [];
    for (const h of optionHits(table, args)) {
      if (h.kind === 'exec' && /^(-M|-m|-r|--require)$/.test(h.option) && (name === 'perl' || name === 'ruby') && SAFE_MODULES.test(h.value ?? '')) continue;
      const value: Word = h.value === undefined ? lit('') : { ...lit(h.value), dynamic: /[$`]/.test(h.value), tilde: h.value.startsWith('~') };
      if (h.kind === 'exec')
        out.push(
          ask(
            'command.exec-option',
            `${name} ${h.option}${h.value !== undefined ? ' ' + h.value : ''} makes ${name} run a program or load code of the caller's choosing; a person must approve it.`,
          ),
        );
      else if (h.kind === 'network') out.push(deny('command.network', `${name} ${h.option} uses the network, which the sandbox does not have.`));
      else if (h.kind === 'write') out.push(...this.writePaths([value]));
      else if (h.value !== undefined) {
        const abs = this.pathOf(value);
        if (abs === null || judgeCommandRead(this.ctx, h.value, abs).decision !== 'allow') {
          out.push(deny('command.outside-path', `${name} ${h.option} ${h.value} makes ${name} work in a directory outside the repository.`));
        }
      }
    }
    return out;
  }

  /** Judges one program invocation; wrappers (env, timeout, xargs, bash -c) come back here with their inner command. */
  async argv(ws: Word[], c: ShellCommand, via: string[], depth: number, extra: Verdict[], stdin: string | undefined, redirectsText: string[]): Promise<void> {
    const argv = ws.map((w) => w.value);
    const segment: CommandSegment = { argv, text: c.text, ...(via.length ? { via } : {}), ...(redirectsText.length ? { redirects: redirectsText } : {}) };
    const local: Verdict[] = [...extra];
    if (c.opaque) local.push(ask('command.opaque', 'The command hides a substitution inside a parameter expansion; a person must read it.'));
    // what a user's allow rule cannot speak for: the redirections, assignments and wrappers around the argv it names
    const around = local.length;
    if (c.builtinTest || ws.length === 0) {
      const what = c.builtinTest ? (c.text.startsWith('((') ? '((' : '[[') : undefined;
      this.segments.push(what ? { ...segment, argv: [what] } : segment);
      const own = what ? allow('command.readonly', 'A shell test only reads.', true) : allow('command.assign', 'Assignments and redirections only.', true);
      this.push(this.strict(what ?? 'a redirection', own, local, false, grantKeyFor([what ?? '>'])) ?? own, local);
      return;
    }
    const { deny: userDeny, allow: userAllow, ask: userAsk } = this.ctx.config.commands;
    const ruleDeny = userDeny.find((r) => matchesRule(r, argv));
    if (ruleDeny) {
      this.segments.push(segment);
      this.verdicts.push(deny('command.user-deny', `The repository's policy denies "${ruleDeny}".`));
      return;
    }
    const name = basename(argv[0] ?? '');
    if (['export', 'declare', 'typeset', 'local', 'readonly'].includes(name)) {
      for (const w of ws.slice(1)) {
        if (!assignmentName(w.value)) continue;
        const v = judgeAssignment(w.value, w.dynamic, name, this.cwdRoot);
        if (v) local.push(v);
      }
    }
    const table = PROGRAM_OPTIONS[name];
    if (table) local.push(...this.options(name, argv.slice(1), table));
    const isCheck = this.checkArgvs.includes(argv.join(' '));
    const result: ProgramResult = isCheck
      ? allow('command.check', `${argv.join(' ')} is one of the repository's checks.`, true)
      : await judgeProgram(ws, this, { via, depth, stdin, command: c, pipedFrom: this.pipedFrom });
    if ('unwrap' in result) {
      // the wrapper itself adds nothing; its command is judged as if run directly
      await this.argv(result.unwrap, c, [...via, result.via], depth, [...local, ...(result.verdicts ?? [])], stdin, redirectsText);
      return;
    }
    this.segments.push(segment);
    let v: Verdict = result;
    local.push(...(result.extra ?? []));
    const worst = mostSevere([v, ...local])!;
    if (worst.decision !== 'deny') {
      if (userAllow.some((r) => matchesRule(r, argv))) {
        v = allow('command.user-allow', `The repository's policy allows ${argv.join(' ')}.`, result.safe === true);
        // the rule speaks for the program and its options; `make test > src/x.ts` still writes src/x.ts
        local.length = around;
        v = this.strict(argv[0]!, v, local, isCheck, grantKeyFor(argv), true) ?? v;
      } else if (userAsk.some((r) => matchesRule(r, argv))) {
        v = ask('command.user-ask', `The repository's policy asks before ${argv.join(' ')}.`, grantKeyFor(argv));
      } else {
        v = this.strict(argv[0]!, v, local, isCheck, grantKeyFor(argv)) ?? v;
      }
    }
    if (v.decision === 'ask' && !v.grantKey) v = { ...v, grantKey: grantKeyFor(argv) };
    this.push(
      v,
      local.map((l) => (l.decision === 'ask' && !l.grantKey ? { ...l, grantKey: grantKeyFor(argv) } : l)),
    );
  }

  /**
   * Strict mode asks before anything that is not a check or only reads: the program, and every
   * path, option and redirection with it (`sort -o out`, `git diff --output=x`, `echo > x` write
   * through a program that only reads). A user's allow rule answers for its program, not for
   * what is redirected around it.
   */
  private strict(what: string, own: Verdict, local: readonly Verdict[], isCheck: boolean, grantKey?: string, allowlisted = false): Verdict | undefined {
    if (this.ctx.mode !== 'strict' || isCheck || own.decision !== 'allow') return undefined;
    const writes = [...(allowlisted ? [] : [own]), ...local].find((x) => x.decision === 'allow' && x.safe !== true);
    if (!writes) return undefined;
    const why = writes === own ? `${what} is not a check or a read-only command` : `${what} does more than read (${writes.reason.replace(/\.$/, '')})`;
    return ask('command.strict', `Strict mode: ${why}, so a person approves it.`, grantKey);
  }

  /** One segment's verdict: the most severe; among allows, the one that changes something names it. */
  private push(own: Verdict, local: readonly Verdict[]): void {
    const all = [own, ...local];
    const worst = mostSevere(all)!;
    const shown = worst.decision === 'allow' ? (all.find((x) => x.safe !== true) ?? worst) : worst;
    // safe to repeat only when the program and every path it touches only read
    this.verdicts.push({ ...shown, safe: all.every((x) => x.safe === true) });
  }
}

/** What a command writes through `>`, when it is static: `printf '…' > run.sh`, `cat <<EOF > x`. */
function contentOf(c: ShellCommand): string | undefined {
  if (c.words.some((w) => w.dynamic)) return undefined;
  const [prog, ...rest] = c.words.map((w) => w.value);
  if (prog === 'echo') return rest.filter((a) => !/^-[neE]+$/.test(a)).join(' ') + '\n';
  if (prog === 'printf' && rest.length >= 1) return rest.join(' ');
  if (prog === 'cat' && rest.length === 0) return c.redirects.find((r) => r.heredoc !== undefined)?.heredoc;
  return undefined;
}

/** Judges a whole command line: every segment, the most severe one decides. */
export async function judgeCommand(command: string, ctx: PolicyContext): Promise<CommandJudgement> {
  const src = command.trim();
  if (!src) return { verdict: deny('input.invalid', 'The command is empty.'), segments: [] };
  const isCheck = ctx.checks.some((c) => c.trim() === src);
  const j = new CommandJudge(ctx);
  await j.script(src, [], 0);
  if (isCheck) {
    return { verdict: allow('command.check', `${src} is one of the repository's checks.`, true), segments: j.segments };
  }
  let worst = mostSevere(j.verdicts) ?? allow('command.readonly', 'Nothing to run.', true);
  // among allows, name the segment that changes something: it is why the command is not safe to repeat
  if (worst.decision === 'allow') worst = j.verdicts.find((x) => x.safe !== true) ?? worst;
  const safe = j.verdicts.every((v) => v.decision === 'allow' && v.safe === true);
  return { verdict: { ...worst, safe }, segments: j.segments };
}
