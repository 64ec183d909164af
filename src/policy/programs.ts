import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { lit, type ShellCommand, type Word } from '../shell/parse.js';
import { allow, ask, deny, type Verdict } from './verdict.js';
import { judgeGit } from './git.js';
import { judgeAssignment } from './environment.js';
import { isDecoder } from './obfuscation.js';
import { diffTargets, positionals, type ProgramJudge, type ProgramResult } from './program-parts.js';

/** Decoded text fed to a program that runs what it reads: only there to hide what runs. */
function decodedIntoShell(j: ProgramJudge, name: string): Verdict | null {
  const d = j.upstream.find((c) => isDecoder(c.words.map((w) => w.value)));
  return d
    ? deny('command.obfuscated', `${d.words[0]?.value} decodes text that ${name} then runs: what runs is hidden until it runs, which Kiln refuses.`)
    : null;
}

export interface ProgramInfo {
  via: string[];
  depth: number;
  /** here-document or here-string fed to the program */
  stdin: string | undefined;
  command: ShellCommand;
  /** the command whose output this one reads through a pipe */
  pipedFrom?: ShellCommand | undefined;
}

/** What a pipe feeds: known only for `cat <<EOF`, `echo 'static'` and `printf 'static'`. */
function pipedText(prev: ShellCommand | undefined): string | undefined {
  if (!prev || prev.words.some((w) => w.dynamic)) return undefined;
  const [prog, ...rest] = prev.words.map((w) => w.value);
  if (prog === 'cat' && rest.length === 0) {
    const r = prev.redirects.find((x) => x.op === '<<' || x.op === '<<-' || x.op === '<<<');
    return r ? (r.heredoc ?? r.target.value) : undefined;
  }
  if (prog === 'echo' && rest.every((a) => !a.startsWith('-'))) return rest.join(' ');
  if (prog === 'printf' && rest.length === 1 && !rest[0]!.includes('%')) return rest[0];
  return undefined;
}

const v = (verdict: Verdict, extra: Verdict[] = []): ProgramResult => ({ ...verdict, extra });

function optValue(args: readonly Word[], names: readonly string[]): Word[] {
  const out: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!.value;
    for (const n of names) {
      if (a === n && args[i + 1]) out.push(args[i + 1]!);
      else if (n.startsWith('--') && a.startsWith(n + '='))
        out.push({ ...args[i]!, value: a.slice(n.length + 1), tilde: a.slice(n.length + 1).startsWith('~') });
    }
  }
  return out;
}

const has = (args: readonly Word[], ...flags: string[]) => args.some((a) => flags.includes(a.value));
/** a short-option cluster like -rf contains the letter */
const hasShort = (args: readonly Word[], letter: string) => {
  const end = args.findIndex((a) => a.value === '--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => /^-[A-Za-z]+$/.test(a.value) && a.value.includes(letter));
};

const readonly = (what: string) => allow('command.readonly', `${what} only reads.`, true);
const testRunner = (what: string) => allow('command.test', `${what} runs the tests.`, true);
const worktree = (what: string) => allow('command.worktree', `${what} only changes files inside the repository (the sandbox keeps it there).`);

const NETWORK = new Set([
  'curl',
  'wget',
  'nc',
  'ncat',
  'netcat',
  'ssh',
  'scp',
  'sftp',
  'telnet',
  'ftp',
  'socat',
  'nmap',
  'dig',
  'nslookup',
  'host',
  'ping',
  'traceroute',
  'gh',
  'aria2c',
  'httpie',
  'http',
  'https',
  'lftp',
  'ssh-keygen',
  'ssh-add',
  'ssh-copy-id',
  'tailscale',
  'ngrok',
]);
const PRIVILEGE = new Set(['sudo', 'su', 'doas', 'pkexec', 'run0']);
const SYSTEM = new Set([
  'dd',
  'fdisk',
  'parted',
  'mount',
  'umount',
  'shutdown',
  'reboot',
  'halt',
  'poweroff',
  'init',
  'telinit',
  'systemctl',
  'service',
  'launchctl',
  'crontab',
  'at',
  'chroot',
  'nsenter',
  'unshare',
  'iptables',
  'ip6tables',
  'nft',
  'modprobe',
  'insmod',
  'rmmod',
  'sysctl',
  'swapon',
  'swapoff',
  'useradd',
  'userdel',
  'usermod',
  'passwd',
  'chpasswd',
  'visudo',
  'shred',
  'wipefs',
  'losetup',
]);
const NO_FILE_ARGS = new Set([
  'echo',
  'printf',
  'pwd',
  'true',
  'false',
  ':',
  'which',
  'type',
  'whoami',
  'id',
  'uname',
  'date',
  'hostname',
  'nproc',
  'seq',
  'sleep',
  'expr',
  'basename',
  'dirname',
  'test',
  '[',
  'printenv',
  'tput',
  'locale',
  'export',
  'unset',
  'set',
  'shift',
  'local',
  'readonly',
  'declare',
  'typeset',
  'read',
  'wait',
  'exit',
  'return',
  'shopt',
  'umask',
  'hash',
  'getopts',
  'break',
  'continue',
  'let',
  'yes',
  'tty',
  'arch',
  'groups',
  'logname',
  'uptime',
  'free',
  'clear',
]);
const FILE_READERS: Record<string, string[]> = {
  cat: [],
  head: ['-n', '-c'],
  tail: ['-n', '-c'],
  wc: [],
  nl: [],
  tac: [],
  rev: [],
  od: ['-t', '-A', '-N', '-j'],
  xxd: ['-l', '-s', '-c', '-g', '-o', '-n', '-cols', '-len', '-seek', '-groupsize', '-offset', '-name'],
  hexdump: ['-n', '-s'],
  strings: ['-n'],
  file: [],
  stat: ['-c', '--format'],
  md5sum: [],
  sha1sum: [],
  sha256sum: [],
  sha512sum: [],
  cksum: [],
  b2sum: [],
  du: ['-d'],
  tree: ['-L', '-I', '-P', '-o', '-H', '-T', '--charset', '--filelimit', '--timefmt', '--sort'],
  ls: ['-I', '--ignore'],
  realpath: [],
  readlink: [],
  diff: ['-U', '-C', '--label', '-x', '-X'],
  cmp: [],
  comm: [],
  cut: ['-d', '-f', '-c', '-b'],
  column: ['-s', '-t'],
  paste: ['-d'],
  fold: ['-w'],
  fmt: ['-w'],
  expand: ['-t'],
  unexpand: ['-t'],
  tr: [],
  base64: [],
  less: ['-o', '-O', '--log-file', '--LOG-FILE', '-k', '--lesskey-file', '-x', '--tabs', '-b', '--buffers', '-h', '-y', '-z', '-j', '-p', '-P', '-t'],
  more: [],
  zcat: [],
  bat: ['-l', '--language', '-r'],
};
const TEST_RUNNERS = new Set(['pytest', 'py.test', 'mocha', 'ava', 'tap', 'phpunit', 'rspec']);
const INSTALL_MANAGERS = new Set(['apt', 'apt-get', 'yum', 'dnf', 'apk', 'brew', 'snap', 'port', 'pacman', 'zypper', 'conda', 'mamba', 'pipx', 'composer']);
const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh', 'mksh', 'fish']);
const PY = /^python(\d+(\.\d+)?)?$/;

const NET_CODE =
  /\b(?:urllib\d?|requests|httpx|aiohttp|socket|http\.client|ftplib|smtplib|telnetlib|paramiko|websockets?|fetch|https?|net|dgram|tls|dns|undici|axios|node-fetch|XMLHttpRequest|WebSocket|LWP|IO::Socket|Net::\w+|open-uri|Socket)\b/;
const SPAWN_CODE =
  /\b(?:child_process|subprocess|os\.system|os\.popen|os\.exec\w*|spawn|execSync|execFile|pty|system|exec|eval|qx|__import__|importlib|import\s*\(|require\s*\(\s*[^'"\s]|Function\s*\(|vm|process\.binding|dlopen|ctypes|popen|IO\.popen|Kernel|Open3|syscall)\b|`|%x[{([]|\bopen\s*\(\s*(?:[A-Za-z_$]+\s*,\s*)?['"][^'"]*\|/;
/** the code writes, deletes or renames files */
const WRITE_CODE =
  /\b(?:write\w*|append\w*|unlink\w*|rm\w*|rmdir\w*|rename\w*|copy\w*|cp\w*|symlink\w*|link\w*|truncate\w*|chmod\w*|mkdir\w*|remove|replace|move|open|sysopen|File\.open|IO\.write|spurt|Path)\b|>>?\s*['"]/;
const LIFECYCLE_KEYS = /["']?(?:preinstall|install|postinstall|prepare|preprepare|postprepare|prepublish|prepublishOnly|prepack|postpack)["']?\s*[:=\]]/;
const SECRET_CODE = /(?:^|[\s'"/])(?:\.env(?:\.[\w.-]+)?|id_rsa|id_ed25519|\.ssh\/|\.aws\/|\.npmrc|\.netrc|\.git-credentials)(?=$|[\s'"),])/;

/**
 * Files inline code writes: every string literal that looks like a path, when the code writes at
 * all. An interpreter may not do what the edit tool may only do with approval (executable config,
 * install scripts), and may not touch protected files; the verifier remains the backstop for
 * paths the code builds when it runs.
 */
function codeWrites(code: string, lang: string, j: ProgramJudge): Verdict[] {
  if (!WRITE_CODE.test(code)) return [];
  const out: Verdict[] = [];
  for (const m of code.matchAll(/(['"`])([^'"`\s]{1,300})\1/g)) {
    const p = m[2]!;
    if (!/[./]/.test(p) || /^[a-z]+:\/\//.test(p) || (/^\.?\w{0,4}$/.test(p) && !p.includes('/'))) continue;
    for (const w of j.writePaths([{ raw: p, value: p, dynamic: false, glob: false, tilde: p.startsWith('~') }])) {
      if (w.decision === 'allow' || w.rule === 'command.outside-write') out.push(w);
      else if (/(^|\/)package\.json$/.test(p) && !LIFECYCLE_KEYS.test(code)) out.push(w);
      else
        out.push(
          deny(
            w.rule === 'write.protected' || w.decision === 'deny' ? w.rule : 'command.interpreter-write',
            `The ${lang} code writes ${p}: ${w.reason.replace(/\.$/, '')}; an interpreter may not change it.`,
          ),
        );
    }
  }
  return out;
}

/** Code given to an interpreter on the command line or through a here-document. */
function judgeCode(code: string, lang: string): Verdict {
  if (NET_CODE.test(code))
    return deny('command.network', `The ${lang} code uses the network (downloads and uploads are not allowed); work with the files in the repository.`);
  if (SECRET_CODE.test(code) && !/\.env\.(?:example|sample|template|dist)/.test(code))
    return deny('command.sensitive-path', `The ${lang} code names a file that may hold credentials.`);
  if (SPAWN_CODE.test(code)) return ask('command.interpreter-exec', `The ${lang} code starts other programs; a person must read it.`);
  return allow('command.interpreter', `Inline ${lang} code without network or process access.`);
}

function sedScriptRisky(script: string): boolean {
  for (const raw of script.split(/[;\n]/)) {
    // drop addresses: line numbers, $, /regex/, ranges
    const cmd = raw
      .trim()
      .replace(/^(?:\d+|\$|\/(?:[^/\\]|\\.)*\/)(?:\s*,\s*(?:\d+|\$|\/(?:[^/\\]|\\.)*\/))?\s*!?\s*/, '')
      .replace(/^[{}]\s*/, '');
    if (/^[eEwWrR]/.test(cmd)) return true;
    if (cmd.startsWith('s') && cmd.length > 1) {
      const d = cmd[1]!;
      let i = 2;
      let seen = 0;
      while (i < cmd.length && seen < 2) {
        if (cmd[i] === '\\') i++;
        else if (cmd[i] === d) seen++;
        i++;
      }
      if (/[ewW]/.test(cmd.slice(i).split(/\s/)[0] ?? '')) return true;
    }
  }
  return false;
}

function judgeSed(args: Word[], j: ProgramJudge): ProgramResult {
  const scripts = optValue(args, ['-e', '--expression']).map((w) => w.value);
  const scriptFiles = optValue(args, ['-f', '--file']);
  let files = positionals(args, ['-e', '--expression', '-f', '--file', '-l', '--line-length']);
  if (scripts.length === 0 && scriptFiles.length === 0) {
    const first = files[0];
    if (first) scripts.push(first.value);
    files = files.slice(1);
  }
  if (scriptFiles.length > 0 || scripts.some(sedScriptRisky)) {
    return v(ask('command.reader-exec', 'The sed script runs commands or writes/reads other files (e, w, r); a person must read it.'), j.sensitiveArgs(args));
  }
  const inPlace = args.some((a) => /^(-i|--in-place)/.test(a.value) || (/^-[a-zA-Z]*i[a-zA-Z]*$/.test(a.value) && !a.value.startsWith('--')));
  if (inPlace) return v(worktree('sed -i'), [...j.writePaths(files)]);
  return v(readonly('sed'), j.readPaths(files));
}

function judgeAwk(args: Word[], j: ProgramJudge, name: string): ProgramResult {
  if (optValue(args, ['-f', '--file']).length > 0)
    return v(ask('command.reader-exec', `${name} -f runs a program from a file; a person must read it.`), j.sensitiveArgs(args));
  const includes = optValue(args, ['-i', '--include']);
  const pos = positionals(args, ['-F', '-v', '--field-separator', '--assign', '-i', '--include']);
  const program = pos[0]?.value ?? '';
  if (/@load|@include/.test(program))
    return v(ask('command.exec-option', `The ${name} program loads an extension or source file (@load, @include); a person must read it.`));
  if (includes.some((w) => w.value !== 'inplace')) return v(ask('command.exec-option', `${name} -i loads a source file; a person must read it.`));
  if (includes.length) {
    const files = pos.slice(1).filter((w) => !/^[A-Za-z_]\w*=/.test(w.value));
    return v(worktree(`${name} -i inplace`), j.writePaths(files));
  }
  if (/\bsystem\s*\(|\|&?\s*["$A-Za-z_(]|>>?\s*["$(]|\bgetline\b/.test(program)) {
    return v(ask('command.reader-exec', `The ${name} program runs commands or writes files (system(), pipes, redirects); a person must read it.`));
  }
  return v(readonly(name), j.readPaths(pos.slice(1).filter((w) => !/^[A-Za-z_]\w*=/.test(w.value))));
}

function judgeGrep(args: Word[], j: ProgramJudge, name: string): ProgramResult {
  if (name === 'rg' && args.some((a) => /^--pre(-glob)?(=|$)/.test(a.value))) {
    return v(ask('command.reader-exec', 'rg --pre runs a program on every file searched; a person must approve it.'));
  }
  const valueOpts =
    name === 'rg'
      ? [
          '-e',
          '-f',
          '-g',
          '--glob',
          '-t',
          '-T',
          '--type',
          '--type-not',
          '-m',
          '-A',
          '-B',
          '-C',
          '-M',
          '-j',
          '--iglob',
          '--type-add',
          '-E',
          '--encoding',
          '--sort',
          '--sortr',
          '-r',
          '--replace',
          '--max-depth',
          '-d',
        ]
      : ['-e', '-f', '-m', '-A', '-B', '-C', '-d', '-D', '--exclude', '--include', '--exclude-dir', '--label'];
  const pos = positionals(args, valueOpts);
  const patternGiven = optValue(args, ['-e', '--regexp']).length > 0 || optValue(args, ['-f', '--file']).length > 0;
  const files = patternGiven ? pos : pos.slice(1);
  return v(readonly(name), [...j.readPaths(files), ...j.readPaths(optValue(args, ['-f', '--file']))]);
}

function judgeFind(args: Word[], j: ProgramJudge, info: ProgramInfo): ProgramResult {
  const roots: Word[] = [];
  let i = 0;
  while (i < args.length && !/^[-(!]/.test(args[i]!.value)) roots.push(args[i++]!);
  const extra: Verdict[] = [...j.readPaths(roots), ...j.sensitiveArgs(args.slice(i).filter((a) => !a.value.includes('*')))];
  let verdict: Verdict = readonly('find');
  for (; i < args.length; i++) {
    const a = args[i]!.value;
    if (/^-(exec|execdir|ok|okdir)$/.test(a)) {
      const inner: Word[] = [];
      for (i++; i < args.length && args[i]!.value !== ';' && args[i]!.value !== '+'; i++) {
        const w = args[i]!;
        inner.push(w.value.includes('{}') ? { ...w, dynamic: true, fromFind: true } : w);
      }
      return { unwrap: inner, via: `find ${a}`, verdicts: [...extra, worktree('find -exec')] };
    }
    if (a === '-delete') {
      for (const r of roots.length ? roots : []) {
        const abs = j.pathOf(r);
        if (abs === null || !extra.every((e) => e.decision === 'allow')) continue;
      }
      if (extra.some((e) => e.decision !== 'allow'))
        return v(deny('command.destructive', "find -delete outside the repository deletes files that are not the project's."), extra);
      // a subdirectory is deleted from; the whole repository only where the tests narrow it
      const whole = (r: Word) => j.pathOf(r) === j.pathOf({ raw: '.', value: j.ctx.workspace, dynamic: false, glob: false, tilde: false });
      extra.push(...j.writePaths(roots.filter((r) => !whole(r))));
      if (roots.length === 0 || roots.some(whole)) {
        const narrowed = args.some((a) => /^-i?(name|path|wholename|regex)$/.test(a.value));
        const paths = optValue(args, ['-path', '-wholename', '-ipath']).map((w) => ({ ...w, value: w.value.replace(/^\.\//, ''), glob: false }));
        extra.push(...j.writePaths(paths));
        if (!narrowed)
          extra.push(
            ask('command.destructive', 'find -delete over the whole repository without a -name or -path test deletes everything; a person must approve it.'),
          );
      }
      verdict = worktree('find -delete');
    }
    if (/^-(fprint|fprint0|fprintf|fls)$/.test(a) && args[i + 1]) extra.push(...j.writePaths([args[i + 1]!]));
  }
  void info;
  return v(verdict, extra);
}

function judgeRm(args: Word[], j: ProgramJudge): ProgramResult {
  const dashes = args.findIndex((a) => a.value === '--');
  const opts = dashes < 0 ? args : args.slice(0, dashes);
  const recursive = has(opts, '-r', '-R', '--recursive') || hasShort(args, 'r') || hasShort(args, 'R');
  const targets = positionals(args);
  const root = j.pathOf({ raw: '.', value: j.ctx.workspace, dynamic: false, glob: false, tilde: false });
  const extra: Verdict[] = [];
  for (const t of targets) {
    const abs = j.pathOf(t);
    if (abs === null) {
      extra.push(ask('command.dynamic-path', `rm ${t.value}: what it deletes is only known when it runs; a person must check it.`));
      continue;
    }
    const wsRoot = j.cwd === abs ? abs : null;
    const atRoot = (p: string) => root !== null && (p === root || root.startsWith(p.endsWith('/') ? p : p + '/'));
    const everythingAtRoot = t.glob && /^(\.\/)?\.?\*$/.test(t.value) && root !== null && j.cwd === root;
    if (atRoot(abs) || everythingAtRoot || (wsRoot !== null && atRoot(wsRoot))) {
      return v(deny('command.destructive', `rm ${t.value} would delete the whole repository or more; delete specific files instead.`));
    }
    const w = j.writePaths([t]);
    for (const x of w) {
      if (x.rule === 'command.outside-write' || x.rule === 'command.system-write') {
        return v(deny('command.destructive', `rm ${t.value} deletes files outside the repository.`));
      }
    }
    extra.push(...w);
  }
  return v(worktree(recursive ? 'rm -r of a subdirectory' : 'rm of files'), extra);
}

/** patch: the files named in the diff (read from -i, a `<` redirect or a here-document) are written. */
function judgePatch(args: Word[], j: ProgramJudge, info: ProgramInfo): ProgramResult {
  const stripArg = args.map((a) => /^-p(\d+)$/.exec(a.value) ?? (a.value.startsWith('--strip=') ? [a.value, a.value.slice(8)] : null)).find(Boolean);
  const strip = stripArg ? Number(stripArg[1]) : 0;
  const pos = positionals(args, ['-i', '--input', '-o', '--output', '-d', '--directory', '-r', '-B', '-D', '-F', '-z', '-V', '-Y', '-g']);
  const writes: Verdict[] = j.writePaths([...(pos[0] ? [pos[0]] : []), ...optValue(args, ['-o', '--output'])]);
  const inputWord = optValue(args, ['-i', '--input'])[0] ?? pos[1] ?? info.command.redirects.find((r) => r.op === '<')?.target;
  let diff = info.stdin;
  if (diff === undefined && inputWord) {
    const abs = j.pathOf(inputWord);
    try {
      diff = abs === null ? undefined : readFileSync(abs, 'utf8');
    } catch {
      diff = undefined;
    }
  }
  if (pos[0] === undefined) {
    if (diff === undefined)
      return v(ask('command.dynamic-path', 'patch writes the files its diff names, which Kiln cannot read before it runs; a person must check them.'));
    const base = optValue(args, ['-d', '--directory'])[0]?.value ?? '.';
    writes.push(...j.writePaths(diffTargets(diff, strip).map((p) => ({ raw: p, value: join(base, p), dynamic: false, glob: false, tilde: false }))));
  }
  return v(worktree('patch'), writes);
}

function judgeChmod(args: Word[], j: ProgramJudge, name: string): ProgramResult {
  const refMode = args.some((a) => a.value.startsWith('--reference'));
  const pos = positionals(args);
  const files = refMode ? pos : pos.slice(1);
  const w = j.writePaths(files);
  if (w.some((x) => x.rule === 'command.outside-write' || x.rule === 'command.system-write')) {
    return v(deny('command.chmod-outside', `${name} changes files outside the repository.`));
  }
  if (name !== 'chmod') return v(ask('command.chown', `${name} changes file ownership; a person must approve it.`), w);
  return v(worktree('chmod'), w);
}

function judgeCopy(args: Word[], j: ProgramJudge, name: string): ProgramResult {
  const target = optValue(args, ['-t', '--target-directory']);
  const pos = positionals(args, ['-t', '--target-directory', '-S', '--suffix']);
  if (name === 'rsync' && args.some((a) => /^[^/]*:|^rsync:\/\//.test(a.value) && !a.value.startsWith('-'))) {
    return v(deny('command.network', 'rsync to or from another host uses the network.'));
  }
  const sources = target.length ? pos : pos.slice(0, -1);
  const dests = target.length ? target : pos.slice(-1);
  const reads = name === 'mv' ? j.writePaths(sources) : j.readPaths(sources);
  return v(worktree(name), [...reads, ...j.sensitiveArgs(sources), ...j.writePaths(dests)]);
}

function shellOf(args: Word[], j: ProgramJudge, info: ProgramInfo, name: string): Promise<ProgramResult> | ProgramResult {
  let i = 0;
  let command: Word | undefined;
  for (; i < args.length; i++) {
    const a = args[i]!.value;
    if (a === '-o' || a === '+o' || a === '-O' || a === '+O') {
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) {
      command = args[i + 1];
      break;
    }
    if (a.startsWith('-') || a.startsWith('+')) continue;
    break;
  }
  if (command) {
    if (command.dynamic) return v(ask('command.dynamic', `${name} -c runs code that is only known when it runs; a person must check it.`));
    return j
      .nested(command.value, [...info.via, `${name} -c`], info.depth)
      .then(() => allow('command.wrapper', `${name} -c: the code inside was judged.`, true));
  }
  const script = args[i];
  if (script && script.value !== '-')
    return v(j.runsWritten(script, name) ?? allow('command.script', `${name} runs ${script.value}, inside the sandbox.`), j.readPaths([script]));
  const decoded = decodedIntoShell(j, name);
  if (decoded) return v(decoded);
  if (info.stdin !== undefined) {
    return j
      .nested(info.stdin, [...info.via, `${name} <<here-doc`], info.depth)
      .then(() => allow('command.wrapper', `${name} <<here-doc: the code inside was judged.`, true));
  }
  const piped = pipedText(info.pipedFrom);
  if (piped !== undefined) {
    return j.nested(piped, [...info.via, `| ${name}`], info.depth).then(() => allow('command.wrapper', `${name}: the code piped into it was judged.`, true));
  }
  return v(ask('command.pipe-to-shell', `${name} runs whatever it reads on its input; a person must check it.`));
}

/** Short options that take a value (the rest of the cluster or the next word), per interpreter. */
const CLUSTER_VALUES: Record<string, { value: string; optional: string }> = {
  python: { value: 'cmWXQ', optional: '' },
  perl: { value: 'eEMmI', optional: 'il0dCx' },
  ruby: { value: 'erICE', optional: 'ix' },
};

/** `-Ec code` → `-E -c code`, `-pi.bak` → `-p -i.bak`, `-Mstrict` → `-M strict`, node's `-pe` → `-p`. */
function splitClusters(args: Word[], name: string): Word[] {
  if (name === 'node') return args.map((a) => (a.value === '-pe' || a.value === '-ep' ? { ...a, value: '-p' } : a));
  const grammar = CLUSTER_VALUES[PY.test(name) ? 'python' : name];
  if (!grammar) return args;
  const out: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!/^-[A-Za-z0-9]{2,}/.test(a.value) || a.value.startsWith('--')) {
      out.push(a);
      if (!a.value.startsWith('-') || a.value === '--') {
        out.push(...args.slice(i + 1));
        break;
      }
      continue;
    }
    const letters = a.value.slice(1);
    for (let k = 0; k < letters.length; k++) {
      const l = letters[k]!;
      const rest = letters.slice(k + 1);
      if (grammar.value.includes(l)) {
        out.push({ ...a, value: `-${l}` });
        if (rest) out.push({ ...a, value: rest, raw: rest });
        break;
      }
      if (grammar.optional.includes(l)) {
        out.push({ ...a, value: `-${l}${rest}` });
        break;
      }
      out.push({ ...a, value: `-${l}` });
    }
  }
  return out;
}

function judgeInterpreter(rawArgs: Word[], j: ProgramJudge, info: ProgramInfo, name: string): ProgramResult {
  const args = splitClusters(rawArgs, name);
  const lang = PY.test(name) ? 'Python' : name === 'node' ? 'JavaScript' : name;
  const codeOpts = PY.test(name) ? ['-c'] : name === 'node' ? ['-e', '--eval', '-p', '--print'] : ['-e', '-E'];
  const valueOpts = PY.test(name)
    ? ['-W', '-X', '-m', '-c']
    : ['-r', '--require', '--import', '--loader', '--experimental-loader', '-e', '--eval', '-p', '--print', '--env-file', '-I', '-M'];
  if (args.some((a) => a.value === '--env-file' || a.value.startsWith('--env-file='))) {
    return v(deny('command.sensitive-path', `${name} --env-file loads a file of secrets.`));
  }
  if (has(args, '--version', '-v', '-V') && args.length === 1) return v(readonly(`${name} --version`));
  const code = optValue(args, codeOpts);
  if (code.length > 0) {
    if (code.some((c) => c.dynamic)) return v(ask('command.dynamic', `The ${lang} code is only known when it runs; a person must check it.`));
    const text = code.map((c) => c.value).join('\n');
    const extra = codeWrites(text, lang, j);
    // perl -pi / ruby -i: edits the files named after the code in place
    if ((name === 'perl' || name === 'ruby') && args.some((a) => /^-i/.test(a.value))) {
      extra.push(...j.writePaths(positionals(args, valueOpts).filter((w) => !code.includes(w))));
    }
    return v(judgeCode(text, lang), extra);
  }
  if (PY.test(name)) {
    const m = optValue(args, ['-m'])[0];
    if (m) {
      const rest = args.slice(args.indexOf(m) + 1);
      if (m.value === 'pytest' || m.value === 'unittest')
        return v(testRunner(`${name} -m ${m.value}`), j.readPaths(positionals(rest).filter((w) => !w.value.includes('::'))));
      if (m.value === 'pip') return judgePip(rest, 'pip');
      if (m.value === 'http.server' || m.value === 'smtpd' || m.value === 'ftplib')
        return v(deny('command.network', `${name} -m ${m.value} serves or uses the network.`));
      if (['venv', 'py_compile', 'compileall', 'json.tool', 'black', 'mypy', 'ruff', 'flake8', 'pylint'].includes(m.value))
        return v(worktree(`${name} -m ${m.value}`), j.sensitiveArgs(rest));
      return v(ask('command.unknown', `${name} -m ${m.value} is not a module Kiln knows to be safe.`));
    }
  }
  if (name === 'node') {
    if (has(args, '--check', '-c')) return v(readonly('node --check'), j.readPaths(positionals(args)));
    if (has(args, '--test')) return v(testRunner('node --test'), j.readPaths(positionals(args, valueOpts)));
  }
  const script = positionals(args, valueOpts)[0];
  if (script && script.value !== '-') {
    const written = j.runsWritten(script, name);
    if (written) return v(written, j.sensitiveArgs(args));
    return v(allow('command.script', `${name} runs ${script.value}, inside the sandbox (no network, only the repository writable).`), [
      ...j.readPaths([script]),
      ...j.sensitiveArgs(args),
    ]);
  }
  if (info.stdin !== undefined) return v(judgeCode(info.stdin, lang), codeWrites(info.stdin, lang, j));
  const decoded = decodedIntoShell(j, name);
  if (decoded) return v(decoded);
  return v(ask('command.interpreter-stdin', `${name} without a script runs what it reads on its input; a person must check it.`));
}

function judgePip(args: Word[], name: string): ProgramResult {
  const sub = positionals(args)[0]?.value;
  if (sub === 'install' || sub === 'uninstall' || sub === 'download')
    return v(ask('command.install', `${name} ${sub} changes the installed packages; a person must approve it.`, `run_command:${name} ${sub}`));
  if (sub === 'list' || sub === 'show' || sub === 'freeze' || sub === 'check' || has(args, '--version', '-V'))
    return v(readonly(`${name} ${sub ?? ''}`.trim()));
  return v(ask('command.unknown', `${name} ${sub ?? ''} is not a subcommand Kiln knows to be safe.`.replace('  ', ' ')));
}

const NPM_INSTALL = new Set([
  'install',
  'i',
  'in',
  'ins',
  'inst',
  'insta',
  'instal',
  'isnt',
  'isnta',
  'isntal',
  'isntall',
  'ci',
  'add',
  'update',
  'up',
  'upgrade',
  'uninstall',
  'un',
  'rm',
  'r',
  'remove',
  'unlink',
  'dedupe',
  'ddp',
  'prune',
  'link',
  'ln',
  'rebuild',
  'rb',
  'install-test',
  'it',
  'install-ci-test',
  'cit',
  'import',
]);
const NPM_PUBLISH = new Set([
  'publish',
  'unpublish',
  'deprecate',
  'dist-tag',
  'owner',
  'access',
  'adduser',
  'login',
  'logout',
  'token',
  'team',
  'star',
  'unstar',
  'hook',
  'org',
]);

/** A package script this run added or changed: ask, showing it. */
function packageScriptChanged(j: ProgramJudge, script: string | undefined): Verdict | null {
  if (!script || !(j.ctx.changedFiles ?? []).includes('package.json')) return null;
  try {
    const pkg = JSON.parse(readFileSync(join(j.ctx.workspace, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    const body = pkg.scripts?.[script];
    if (body === undefined) return null;
    return ask(
      'command.run-written',
      `The package script "${script}" is in package.json, which this run changed; a person must read it first:\n${script}: ${body}`,
    );
  } catch {
    return ask('command.run-written', `package.json, which this run changed, does not parse; a person must read the script "${script}" first.`);
  }
}

function judgeNodePm(args: Word[], j: ProgramJudge, name: string): ProgramResult {
  const pos = positionals(args, ['--prefix', '-C', '--dir', '-w', '--workspace', '--filter', '-F']);
  const sub = pos[0]?.value;
  if (has(args, '--version', '-v') && !sub) return v(readonly(`${name} --version`));
  if (sub === undefined) {
    if (name === 'yarn') return v(ask('command.install', 'yarn installs the dependencies; a person must approve it.', 'run_command:yarn install'));
    return v(ask('command.unknown', `${name} without a subcommand.`));
  }
  const changedScript = packageScriptChanged(
    j,
    sub === 'run' || sub === 'run-script' || sub === 'rum' || sub === 'urn' ? pos[1]?.value : sub === 't' || sub === 'tst' ? 'test' : sub,
  );
  if (changedScript) return v(changedScript);
  if (sub === 'test' || sub === 't' || sub === 'tst') return v(testRunner(`${name} test`));
  if (NPM_PUBLISH.has(sub) || (name === 'yarn' && sub === 'npm' && pos[1]?.value === 'publish')) {
    return v(deny('command.publish', `${name} ${sub} publishes or changes the registry; Kiln never publishes.`));
  }
  if (NPM_INSTALL.has(sub) || (name === 'yarn' && sub === 'install')) {
    return v(
      ask(
        'command.install',
        `${name} ${sub} changes the installed packages (and runs their install scripts); a person must approve it.`,
        `run_command:${name} ${sub}`,
      ),
    );
  }
  if (sub === 'exec' || sub === 'x' || sub === 'dlx') {
    return { unwrap: pos.slice(1), via: `${name} ${sub}` };
  }
  if (
    sub === 'run' ||
    sub === 'run-script' ||
    sub === 'rum' ||
    sub === 'urn' ||
    (name !== 'npm' && !['ls', 'list', 'll', 'why', 'explain', 'help', 'info', 'view', 'outdated', 'audit', 'config', 'pkg', 'init', 'create'].includes(sub))
  ) {
    const script = sub === 'run' || sub === 'run-script' || sub === 'rum' || sub === 'urn' ? pos[1]?.value : sub;
    if (script === 'test') return v(testRunner(`${name} run test`));
    if (script === undefined) return v(readonly(`${name} run`));
    return v(
      ask(
        'command.npm-script',
        `${name} run ${script} runs a package script Kiln cannot inspect; a person must approve it (or make it a check).`,
        `run_command:${name} run ${script}`,
      ),
    );
  }
  if (['ls', 'list', 'll', 'la', 'why', 'explain', 'help', 'prefix', 'root', 'bin'].includes(sub)) return v(readonly(`${name} ${sub}`));
  if (sub === 'pkg' && pos[1]?.value === 'get') return v(readonly(`${name} pkg get`));
  if (sub === 'config' && (pos[1]?.value === 'get' || pos[1]?.value === 'list' || pos[1]?.value === 'ls')) return v(readonly(`${name} config ${pos[1].value}`));
  void j;
  return v(ask('command.unknown', `${name} ${sub} is not a subcommand Kiln knows to be safe.`, `run_command:${name} ${sub}`));
}

function judgeLangTool(args: Word[], name: 'go' | 'cargo'): ProgramResult {
  const sub = positionals(args)[0]?.value;
  if (sub === 'test') return v(testRunner(`${name} test`));
  if (name === 'go') {
    if (sub === 'vet' || sub === 'version' || sub === 'env' || sub === 'list' || sub === 'doc') return v(readonly(`go ${sub}`));
    if (sub === 'build' || sub === 'fmt' || sub === 'run') return v(worktree(`go ${sub}`));
    if (sub === 'get' || sub === 'install' || sub === 'mod')
      return v(ask('command.install', `go ${sub} changes or downloads modules; a person must approve it.`, `run_command:go ${sub}`));
  } else {
    if (sub === 'check' || sub === 'clippy' || sub === 'tree' || sub === 'metadata' || sub === 'version' || sub === '--version')
      return v(allow('command.readonly', `cargo ${sub} only reads and builds.`, true));
    if (sub === 'build' || sub === 'fmt' || sub === 'doc' || sub === 'run' || sub === 'bench') return v(worktree(`cargo ${sub}`));
    if (sub === 'add' || sub === 'install' || sub === 'update' || sub === 'remove' || sub === 'fetch')
      return v(ask('command.install', `cargo ${sub} changes or downloads crates; a person must approve it.`, `run_command:cargo ${sub}`));
    if (sub === 'publish' || sub === 'login' || sub === 'owner' || sub === 'yank')
      return v(deny('command.publish', `cargo ${sub} publishes or changes the registry; Kiln never publishes.`));
  }
  return v(
    ask(
      'command.unknown',
      `${name} ${sub ?? ''} is not a subcommand Kiln knows to be safe.`.replace(/ +\./, '.'),
      `run_command:${name}${sub ? ' ' + sub : ''}`,
    ),
  );
}

/** Skips a wrapper's own options; returns the index of its command. */
function skipOptions(args: readonly Word[], valueOpts: readonly string[], positionalsToSkip = 0): number {
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!.value;
    if (a === '--') return i + 1 + positionalsToSkip;
    if (a.startsWith('-') && a.length > 1) {
      if (valueOpts.includes(a)) i++;
      continue;
    }
    break;
  }
  return i + positionalsToSkip;
}

type Judge = (args: Word[], j: ProgramJudge, info: ProgramInfo, name: string, first: Word) => ProgramResult | Promise<ProgramResult>;

const unknownRunner: Judge = (_a, _j, _i, name) => v(ask('command.unknown', `${name} runs commands Kiln cannot inspect; a person must approve it.`));
const unknownProgram: Judge = (args, j, _i, name) =>
  v(ask('command.unknown', `${name} is not a program Kiln knows to be safe; a person must approve it.`), j.sensitiveArgs(args));
const fileReader: Judge = (args, j, _i, name) => {
  const files = positionals(args, FILE_READERS[name]!);
  const writes = READERS_THAT_WRITE[name]?.(args, files) ?? [];
  return v(writes.length ? worktree(name) : readonly(name), [
    ...j.readPaths(writes.length ? files.filter((f) => !writes.includes(f)) : files),
    ...j.writePaths(writes),
    ...j.sensitiveArgs(args.filter((a) => a.value.startsWith('-'))),
  ]);
};
/** Listed readers that can write a file without an option naming it (those are in PROGRAM_OPTIONS): what each writes. */
const READERS_THAT_WRITE: Record<string, (args: readonly Word[], files: Word[]) => Word[]> = {
  // xxd [infile [outfile]]
  xxd: (_args, files) => files.slice(1, 2),
  // file -C compiles each magic file (-m a:b) to NAME.mgc in the current directory
  file: (args) => {
    if (!has(args, '-C', '--compile')) return [];
    const magic = optValue(args, ['-m', '--magic-file']).flatMap((w) => w.value.split(':'));
    return (magic.length ? magic : ['magic']).map((m) => lit(`${basename(m)}.mgc`));
  },
};
/** yq -i / --inplace writes the files it reads; the first positional is the expression unless it comes from a file. */
const judgeYq: Judge = (args, j, _i, name) => {
  const files = positionals(args, ['--from-file', '--arg', '--argjson', '-I', '--indent', '-o', '--output-format', '-p', '--input-format']);
  const inPlace = has(args, '--inplace', '--in-place') || hasShort(args, 'i');
  if (!inPlace) return v(readonly(name), j.sensitiveArgs(args));
  const written = optValue(args, ['--from-file']).length ? files : files.slice(1);
  return v(worktree(`${name} -i`), [...j.writePaths(written), ...j.sensitiveArgs(args)]);
};
const installer: Judge = (args, _j, _i, name) => {
  const sub = positionals(args)[0]?.value;
  return v(
    ask(
      'command.install',
      `${name} ${sub ?? ''} installs or changes packages; a person must approve it.`.replace('  ', ' '),
      `run_command:${name}${sub ? ' ' + sub : ''}`,
    ),
  );
};
const publishes =
  (subs: string[], judge: Judge): Judge =>
  (args, j, info, name, first) =>
    subs.includes(args[0]?.value ?? '')
      ? v(deny('command.publish', `${name} ${args[0]!.value} publishes or talks to a registry; Kiln never publishes.`))
      : judge(args, j, info, name, first);
const formatter: Judge = (args, j, _i, name) => {
  const writes =
    has(args, '--fix', '--write', '-w', 'format', '--apply') ||
    (name === 'black' && !has(args, '--check', '--diff')) ||
    (name === 'rustfmt' && !has(args, '--check'));
  return v(writes ? worktree(name) : readonly(name), j.sensitiveArgs(args));
};
const wrapper =
  (valueOpts: string[], positionalsToSkip = 0): Judge =>
  (args, _j, _i, name) => ({ unwrap: args.slice(skipOptions(args, valueOpts, positionalsToSkip)), via: name });
const archiver: Judge = (args, j, _i, name) =>
  v(worktree(name), [...j.sensitiveArgs(args), ...j.writePaths(optValue(args, ['-C', '--directory', '-d', '-o', '--output']))]);

function judgeEnv(args: Word[], j: ProgramJudge): ProgramResult {
  const i = skipOptions(args, ['-u', '--unset', '-C', '--chdir', '-S', '--split-string']);
  // -S splits one string into a command; `-S"…"` attaches it
  const attached = args.slice(0, i).find((a) => /^-[a-zA-Z]*S./.test(a.value));
  const split = optValue(args, ['-S', '--split-string'])[0] ?? (attached && { ...attached, value: attached.value.slice(attached.value.indexOf('S') + 1) });
  if (split) return v(ask('command.dynamic', `env -S splits "${split.value}" into a command by rules of its own; run the command directly.`));
  let k = i;
  const envVerdicts: Verdict[] = [];
  while (k < args.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[k]!.value)) {
    const e = judgeAssignment(args[k]!.value, args[k]!.dynamic, 'env', j.ctx.workspace);
    if (e) envVerdicts.push(e);
    k++;
  }
  if (k >= args.length) return v(readonly('env'), envVerdicts);
  return { unwrap: args.slice(k), via: 'env', verdicts: envVerdicts };
}

function judgeXargs(args: Word[], j: ProgramJudge): ProgramResult {
  const rest = args.slice(
    skipOptions(args, ['-n', '-L', '-P', '-s', '-I', '-d', '-E', '-a', '--max-args', '--max-procs', '--delimiter', '--arg-file', '--replace', '--max-lines']),
  );
  const fromFile = j.readPaths(optValue(args, ['-a', '--arg-file']));
  if (rest.length === 0) return v(readonly('xargs (echo)'), fromFile);
  const inner = rest[0]!.value;
  const readsOnly = NO_FILE_ARGS.has(inner) || inner in FILE_READERS || ['grep', 'egrep', 'fgrep', 'rg', 'wc', 'sed', 'awk', 'git'].includes(inner);
  const extra = readsOnly
    ? fromFile
    : [...fromFile, ask('command.dynamic-path', `xargs ${inner} acts on paths read from its input, only known when it runs; a person must check them.`)];
  return { unwrap: rest, via: 'xargs', verdicts: extra };
}

async function judgeEval(args: Word[], j: ProgramJudge, info: ProgramInfo): Promise<ProgramResult> {
  if (args.some((a) => a.dynamic && (/\$\(|`/.test(a.raw) || a.assembled || args.length > 1))) {
    return v(deny('command.obfuscated', 'eval runs a string built when it runs: what runs is hidden until then, which Kiln refuses.'));
  }
  if (args.some((a) => a.dynamic)) return v(ask('command.dynamic', 'eval runs code only known when it runs; a person must check it.'));
  await j.nested(args.map((a) => a.value).join(' '), [...info.via, 'eval'], info.depth);
  return v(allow('command.wrapper', 'eval: the code inside was judged.', true));
}

function judgeMake(args: Word[], j: ProgramJudge): ProgramResult {
  const lit = (f: string): Word => ({ raw: f, value: f, dynamic: false, glob: false, tilde: false });
  const file =
    optValue(args, ['-f', '--file', '--makefile'])[0] ??
    ['GNUmakefile', 'makefile', 'Makefile'].map(lit).find((f) => (j.ctx.changedFiles ?? []).includes(f.value));
  return v((file && j.runsWritten(file, 'make')) || ask('command.unknown', 'make runs commands Kiln cannot inspect; a person must approve it.'));
}

function judgeLn(args: Word[], j: ProgramJudge): ProgramResult {
  // a link is a second name for its source: writing through it writes the source
  const target = optValue(args, ['-t', '--target-directory']);
  const pos = positionals(args, ['-t', '--target-directory', '-S', '--suffix']);
  const dests = target.length ? target : pos.length > 1 ? pos.slice(-1) : [];
  const sources = target.length ? pos : pos.slice(0, -1);
  return v(worktree('ln'), [...j.writePaths(dests), ...j.writePaths(sources)]);
}

function judgePyEnv(args: Word[], j: ProgramJudge, name: string): ProgramResult {
  const sub = positionals(args)[0]?.value;
  if (sub === 'run') return { unwrap: args.slice(args.findIndex((a) => a.value === 'run') + 1), via: `${name} run` };
  if (sub === 'pip') return judgePip(args.slice(args.findIndex((a) => a.value === 'pip') + 1), `${name} pip`);
  void j;
  return v(
    ask(
      'command.install',
      `${name} ${sub ?? ''} manages the environment; a person must approve it.`.replace('  ', ' '),
      `run_command:${name}${sub ? ' ' + sub : ''}`,
    ),
  );
}

/**
 * Every program Kiln knows, by name, and the judge for it. One name, one judge: nothing here
 * depends on the order of entries. A program not listed asks.
 */
const PROGRAMS: Record<string, Judge> = {
  ...Object.fromEntries([...NO_FILE_ARGS].map((n) => [n, (_a: Word[], _j: ProgramJudge, _i: ProgramInfo, name: string) => v(readonly(name))])),
  ...Object.fromEntries(Object.keys(FILE_READERS).map((n) => [n, fileReader])),
  ...Object.fromEntries([...SHELLS].map((n) => [n, (args: Word[], j: ProgramJudge, info: ProgramInfo, name: string) => shellOf(args, j, info, name)])),
  ...Object.fromEntries([...INSTALL_MANAGERS].map((n) => [n, installer])),
  ...Object.fromEntries(
    [...TEST_RUNNERS].map((n) => [n, (args: Word[], j: ProgramJudge, _i: ProgramInfo, name: string) => v(testRunner(name), j.sensitiveArgs(args))]),
  ),
  ...Object.fromEntries(
    ['mypy', 'pyright', 'flake8', 'pylint', 'shellcheck', 'golangci-lint', 'clippy-driver', 'stylelint', 'markdownlint'].map((n) => [
      n,
      (args: Word[], j: ProgramJudge, _i: ProgramInfo, name: string) => v(readonly(name), j.sensitiveArgs(args)),
    ]),
  ),
  ...Object.fromEntries(['eslint', 'prettier', 'ruff', 'black', 'biome', 'rustfmt', 'gofmt'].map((n) => [n, formatter])),
  ...Object.fromEntries(
    ['grep', 'egrep', 'fgrep', 'zgrep', 'rg', 'ag', 'ack'].map((n) => [
      n,
      (args: Word[], j: ProgramJudge, _i: ProgramInfo, name: string) => judgeGrep(args, j, name),
    ]),
  ),
  ...Object.fromEntries(
    ['awk', 'gawk', 'mawk', 'nawk'].map((n) => [n, (args: Word[], j: ProgramJudge, _i: ProgramInfo, name: string) => judgeAwk(args, j, name)]),
  ),
  ...Object.fromEntries(['tar', 'unzip', 'zip', 'gzip', 'gunzip', 'bzip2', 'xz'].map((n) => [n, archiver])),
  ...Object.fromEntries(
    ['mkdir', 'touch', 'rmdir', 'truncate'].map((n) => [
      n,
      (args: Word[], j: ProgramJudge, _i: ProgramInfo, name: string) =>
        v(worktree(name), j.writePaths(positionals(args, ['-m', '--mode', '-s', '--size', '-d', '-t', '-r', '--date', '--reference']))),
    ]),
  ),
  ...Object.fromEntries(['trap', 'alias', 'watch', 'deno', 'bun'].map((n) => [n, unknownRunner])),
  ...Object.fromEntries(
    ['kill', 'pkill', 'killall'].map((n) => [
      n,
      (_a: Word[], _j: ProgramJudge, _i: ProgramInfo, name: string) => v(ask('command.kill', `${name} stops processes; a person must approve it.`)),
    ]),
  ),
  ...Object.fromEntries(
    ['node', 'perl', 'ruby', 'tsx', 'ts-node'].map((n) => [
      n,
      (args: Word[], j: ProgramJudge, info: ProgramInfo, name: string) => judgeInterpreter(args, j, info, name === 'tsx' || name === 'ts-node' ? 'node' : name),
    ]),
  ),
  env: (args, j) => judgeEnv(args, j),
  cd: (args, j) => v(j.cd(args.find((a) => !a.value.startsWith('-')))),
  pushd: (args, j) => v(j.cd(args.find((a) => !a.value.startsWith('-')))),
  popd: () => v(allow('command.cd', 'popd changes the directory.', false)),
  timeout: wrapper(['-s', '--signal', '-k', '--kill-after'], 1),
  nice: wrapper(['-n', '--adjustment']),
  nohup: (args, _j, _i, name) => ({ unwrap: args, via: name }),
  builtin: (args, _j, _i, name) => ({ unwrap: args, via: name }),
  stdbuf: wrapper(['-i', '-o', '-e']),
  ionice: wrapper(['-c', '-n', '-p', '-P', '-u']),
  time: (args, j) => ({
    unwrap: args.slice(skipOptions(args, ['-f', '--format', '-o', '--output'])),
    via: 'time',
    verdicts: j.writePaths(optValue(args, ['-o', '--output'])),
  }),
  exec: (args) => {
    const rest = args.slice(skipOptions(args, ['-a']));
    return rest.length ? { unwrap: rest, via: 'exec' } : v(allow('command.assign', 'exec without a command only sets redirections.', true));
  },
  command: (args) => (has(args, '-v', '-V') ? v(readonly('command -v')) : { unwrap: args.slice(skipOptions(args, [])), via: 'command' }),
  xargs: (args, j) => judgeXargs(args, j),
  eval: (args, j, info) => judgeEval(args, j, info),
  source: (args, j, _i, name) =>
    v((args[0] && j.runsWritten(args[0], name)) || allow('command.script', `${name} runs a script inside the sandbox.`), j.readPaths(args.slice(0, 1))),
  '.': (args, j, _i, name) =>
    v((args[0] && j.runsWritten(args[0], name)) || allow('command.script', `${name} runs a script inside the sandbox.`), j.readPaths(args.slice(0, 1))),
  make: (args, j) => judgeMake(args, j),
  sed: (args, j) => judgeSed(args, j),
  gsed: (args, j) => judgeSed(args, j),
  jq: (args, j, _i, name) => v(readonly(name), j.sensitiveArgs(args)),
  yq: judgeYq,
  find: (args, j, info) => judgeFind(args, j, info),
  sort: (args, j) =>
    v(readonly('sort'), [
      ...j.readPaths(positionals(args, ['-o', '--output', '-k', '-t', '-S', '-T', '--key', '--field-separator'])),
      ...j.writePaths(optValue(args, ['-o', '--output'])),
    ]),
  uniq: (args, j) => {
    const pos = positionals(args, ['-f', '-s', '-w']);
    return v(readonly('uniq'), [...j.readPaths(pos.slice(0, 1)), ...j.writePaths(pos.slice(1, 2))]);
  },
  tee: (args, j) => v(worktree('tee'), j.writePaths(positionals(args))),
  rm: (args, j) => judgeRm(args, j),
  ln: (args, j) => judgeLn(args, j),
  patch: (args, j, info) => judgePatch(args, j, info),
  chmod: (args, j, _i, name) => judgeChmod(args, j, name),
  chown: (args, j, _i, name) => judgeChmod(args, j, name),
  chgrp: (args, j, _i, name) => judgeChmod(args, j, name),
  cp: (args, j) => judgeCopy(args, j, 'cp'),
  install: (args, j) => judgeCopy(args, j, 'cp'),
  mv: (args, j) => judgeCopy(args, j, 'mv'),
  rsync: (args, j) => judgeCopy(args, j, 'rsync'),
  git: (args, j) => judgeGit(args, j),
  npx: (args, _j, _i, name) => {
    const at = skipOptions(args, ['-p', '--package', '-c', '--call']);
    const own = optValue(args.slice(0, at), ['-p', '--package', '-c', '--call']);
    return {
      unwrap: args.slice(at),
      via: name,
      verdicts: own.length ? [ask('command.install', `${name} --package downloads and runs a package; a person must approve it.`)] : [],
    };
  },
  npm: (args, j, _i, name) => judgeNodePm(args, j, name),
  pnpm: (args, j, _i, name) => judgeNodePm(args, j, name),
  yarn: (args, j, _i, name) => judgeNodePm(args, j, name),
  pip: (args, _j, _i, name) => judgePip(args, name),
  pip3: (args, _j, _i, name) => judgePip(args, name),
  uv: (args, j, _i, name) => judgePyEnv(args, j, name),
  pipenv: (args, j, _i, name) => judgePyEnv(args, j, name),
  poetry: publishes(['publish'], (args, j, _i, name) => judgePyEnv(args, j, name)),
  go: (args) => judgeLangTool(args, 'go'),
  cargo: (args) => judgeLangTool(args, 'cargo'),
  gem: publishes(['push'], installer),
  bundle: (args, j, info, name, first) => {
    const sub = positionals(args)[0]?.value;
    if (sub === 'exec') return { unwrap: args.slice(args.findIndex((a) => a.value === 'exec') + 1), via: 'bundle exec' };
    return installer(args, j, info, name, first);
  },
  twine: publishes(['upload'], unknownProgram),
  docker: publishes(['push', 'login'], unknownProgram),
  podman: publishes(['push', 'login'], unknownProgram),
  tsc: (args, j, _i, name) => {
    if (has(args, '--watch', '-w')) return v(ask('command.watch', `${name} --watch never ends; run it without --watch.`));
    return v(readonly(name), j.writePaths(optValue(args, ['--outDir', '--outFile', '--declarationDir'])));
  },
  vitest: (args) => {
    if (args[0]?.value === 'run' || has(args, '--run')) return v(testRunner('vitest run'));
    return v(ask('command.watch', 'vitest without run starts watch mode and never ends; use vitest run.'));
  },
  jest: (args) => {
    if (has(args, '--watch', '--watchAll')) return v(ask('command.watch', 'jest --watch never ends; run it without --watch.'));
    return v(testRunner('jest'));
  },
};
PROGRAMS['vue-tsc'] = PROGRAMS.tsc!;
PROGRAMS.bunx = unknownRunner;

/** The verdict for one program invocation, or the inner command of a wrapper to judge instead. */
export async function judgeProgram(ws: Word[], j: ProgramJudge, info: ProgramInfo): Promise<ProgramResult> {
  const first = ws[0]!;
  const args = ws.slice(1);
  if (first.dynamic) return v(ask('command.dynamic', `The program to run (${first.value}) is only known when it runs; a person must check it.`));
  let name = first.value;
  // a tool from the project's own node_modules/.bin is that tool
  if (name.includes('/') && /(^|\/)node_modules\/\.bin\/[^/]+$/.test(name)) name = basename(name);
  if (j.functions.has(name)) return v(allow('command.function-call', `${name} is a function defined earlier in the command; its body was judged.`));
  // /bin/rm is rm: judged as the program it is, and a full path that dodges a refusal is refused
  if (/^\/(?:usr\/)?(?:local\/)?s?bin\/[^/]+$/.test(name) && !j.functions.has(basename(name))) {
    const r = await judgeProgram([{ ...first, value: basename(name), raw: basename(name) }, ...args], j, info);
    if ('unwrap' in r || r.decision === 'allow') return r;
    return v(
      deny(
        r.decision === 'deny' ? r.rule : 'command.obfuscated',
        `${name} is ${basename(name)} written by its full path, which does not change the judgement: ${r.reason}`,
      ),
      r.extra ?? [],
    );
  }

  // hard denies go by the program's own name however it is spelled (/usr/bin/curl is curl); the
  // table does not, so an arbitrary ./bin/ls is judged as the unknown program it is
  const base = basename(name);
  if (PRIVILEGE.has(base)) return v(deny('command.privilege', `${name} runs commands as another user; Kiln never raises privileges.`));
  if (NETWORK.has(base)) return v(deny('command.network', `${name} uses the network, which the sandbox does not have; work with the files in the repository.`));
  if (SYSTEM.has(base) || /^mkfs(\.|$)/.test(base)) return v(deny('command.system', `${name} changes the machine, not the project.`));

  const judge = Object.hasOwn(PROGRAMS, name)
    ? PROGRAMS[name]
    : PY.test(name)
      ? (a: Word[], jj: ProgramJudge, i: ProgramInfo) => judgeInterpreter(a, jj, i, name)
      : undefined;
  if (judge) return judge(args, j, info, name, first);

  const written = name.includes('/') ? j.runsWritten(first, name) : null;
  if (written) return v(written, j.sensitiveArgs(args));
  return unknownProgram(args, j, info, name, first);
}
