import { isAbsolute } from 'node:path';
import { ask, deny, type Verdict } from './verdict.js';

/*
 * What a variable assignment changes. `NAME=value cmd`, `export NAME=value` and a bare
 * `NAME=value` are judged alike: a variable a program reads at start can make an allowed,
 * read-only command run code of the model's choosing (LD_PRELOAD, NODE_OPTIONS, GIT_PAGER...).
 */

type Effect = 'loader' | 'interpreter' | 'shell-startup' | 'git' | 'pager-editor' | 'path' | 'config' | 'package-manager';

const WHAT: Record<Effect, string> = {
  loader: 'makes the dynamic loader load code of its choosing into every program',
  interpreter: 'makes the interpreter load or run code of its choosing',
  'shell-startup': 'makes the shell run code of its choosing when it starts or prints a prompt',
  git: 'makes git run a program of its choosing or use another repository or configuration',
  'pager-editor': 'names a program that other programs start (pager, editor, askpass)',
  path: 'changes where programs are looked up',
  config: 'points programs at configuration files of its choosing',
  'package-manager': 'changes how the package manager runs scripts or where it installs',
};

/** Exact names and what they change. */
const NAMES: Record<string, Effect> = {
  BASH_ENV: 'shell-startup',
  ENV: 'shell-startup',
  PS1: 'shell-startup',
  PS2: 'shell-startup',
  PS3: 'shell-startup',
  PS4: 'shell-startup',
  PROMPT_COMMAND: 'shell-startup',
  SHELLOPTS: 'shell-startup',
  BASHOPTS: 'shell-startup',
  BASH_XTRACEFD: 'shell-startup',
  ZDOTDIR: 'shell-startup',
  BASH_LOADABLES_PATH: 'shell-startup',
  CDPATH: 'path',
  NODE_OPTIONS: 'interpreter',
  NODE_PATH: 'interpreter',
  NODE_REPL_EXTERNAL_MODULE: 'interpreter',
  PYTHONSTARTUP: 'interpreter',
  PYTHONPATH: 'interpreter',
  PYTHONHOME: 'interpreter',
  PYTHONINSPECT: 'interpreter',
  PYTHONUSERBASE: 'interpreter',
  PYTHONEXECUTABLE: 'interpreter',
  PYTHONBREAKPOINT: 'interpreter',
  PERL5OPT: 'interpreter',
  PERL5LIB: 'interpreter',
  PERLLIB: 'interpreter',
  PERL5DB: 'interpreter',
  RUBYOPT: 'interpreter',
  RUBYLIB: 'interpreter',
  JAVA_TOOL_OPTIONS: 'interpreter',
  _JAVA_OPTIONS: 'interpreter',
  JDK_JAVA_OPTIONS: 'interpreter',
  CLASSPATH: 'interpreter',
  GOFLAGS: 'interpreter',
  RUSTC_WRAPPER: 'interpreter',
  RUSTFLAGS: 'interpreter',
  CARGO_BUILD_RUSTC_WRAPPER: 'interpreter',
  PAGER: 'pager-editor',
  MANPAGER: 'pager-editor',
  EDITOR: 'pager-editor',
  VISUAL: 'pager-editor',
  BROWSER: 'pager-editor',
  LESSOPEN: 'pager-editor',
  LESSCLOSE: 'pager-editor',
  SSH_ASKPASS: 'pager-editor',
  SUDO_ASKPASS: 'pager-editor',
  TERMINAL: 'pager-editor',
  PATH: 'path',
  HOME: 'config',
  XDG_CONFIG_HOME: 'config',
  XDG_DATA_HOME: 'config',
  XDG_CONFIG_DIRS: 'config',
  INPUTRC: 'config',
  CURL_HOME: 'config',
  WGETRC: 'config',
  NPM_CONFIG_USERCONFIG: 'config',
  PREFIX: 'package-manager',
};

/** Search paths for modules: common in test commands (`PYTHONPATH=src pytest`), so a person decides. */
const MODULE_PATHS = new Set(['PYTHONPATH', 'NODE_PATH', 'PERL5LIB', 'PERLLIB', 'RUBYLIB', 'CLASSPATH']);

/** Prefixes: every variable of the family changes the same thing. */
const PREFIXES: [RegExp, Effect][] = [
  [/^LD_/, 'loader'],
  [/^DYLD_/, 'loader'],
  [/^GIT_/, 'git'],
  [/^npm_config_/i, 'package-manager'],
  [/^(YARN|PNPM|BUN)_/i, 'package-manager'],
];

/** GIT_* variables that only label commits or tune output. */
const GIT_HARMLESS = new Set([
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_COMMITTER_DATE',
  'GIT_TERMINAL_PROMPT',
  'GIT_OPTIONAL_LOCKS',
  'GIT_FLUSH',
  'GIT_MERGE_AUTOEDIT',
]);

/** Names that by convention carry a command or a search path for some tool. */
const SUSPICIOUS = /(?:_COMMAND|_CMD|_PROGRAM|_SHELL|_PAGER|_EDITOR|_OPTIONS|_OPTS|_HOOKS?|_PATH|_EXEC|_LOADER|_PLUGINS?|_REQUIRE|_PRELOAD|_WRAPPER|RC)$/;

/** The variable's name from `NAME=value`, `NAME+=value` or `NAME[i]=value`; null for a plain word. */
export function assignmentName(text: string): string | null {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=/.exec(text);
  return m ? m[1]! : null;
}

function effectOf(name: string): Effect | null {
  if (NAMES[name]) return NAMES[name]!;
  if (GIT_HARMLESS.has(name)) return null;
  for (const [re, effect] of PREFIXES) if (re.test(name)) return effect;
  return null;
}

/** A PATH whose entries are all absolute, outside the repository's reach, plus $PATH itself. */
function pathLooksFixed(value: string, workspace: string): boolean {
  return value.split(':').every((e) => e === '$PATH' || e === '${PATH}' || (isAbsolute(e) && !e.includes('$') && !e.startsWith(workspace)));
}

/**
 * The verdict for one assignment (`NAME=value`), or null when it changes nothing a program acts on.
 * `how` says where it was written ("prefix", "export").
 */
export function judgeAssignment(text: string, dynamic: boolean, how: string, workspace: string): Verdict | null {
  const name = assignmentName(text);
  if (!name) return null;
  const value = text.slice(text.indexOf('=') + 1);
  const effect = effectOf(name);
  if (effect === null) {
    if (name === 'IFS') return null;
    if (SUSPICIOUS.test(name)) return ask('command.env', `The ${how} ${name}=… may name a program or search path some tool acts on; a person must check it.`);
    return null;
  }
  if (MODULE_PATHS.has(name)) {
    return ask(
      'command.env',
      `The ${how} ${name}=${value} changes where modules are loaded from (a sitecustomize or init file there runs first); a person must check it.`,
    );
  }
  if (effect === 'path' && !dynamic && pathLooksFixed(value, workspace)) {
    return ask('command.env', `The ${how} ${name}=${value} changes where programs are looked up; a person must check it.`);
  }
  if (
    name === 'NODE_OPTIONS' &&
    !dynamic &&
    /^(?:\s*--(?:max-old-space-size|max-semi-space-size|stack-size|enable-source-maps|no-warnings|no-deprecation|trace-warnings|unhandled-rejections)(?:=\S+)?)+\s*$/.test(
      value,
    )
  )
    return null;
  if ((name === 'PS1' || name === 'PS2' || name === 'PS3' || name === 'PS4') && !/[$`\\]/.test(value)) return null;
  return deny('command.env', `The ${how} ${name}=… ${WHAT[effect]}; Kiln does not let a command change that. Run the command without it.`);
}
