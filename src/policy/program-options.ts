/*
 * Program knowledge as data: for each program, the options (and subcommands) that make an
 * ordinary tool run another program, write a file it names, or use the network. Adding a program
 * is one entry here plus its cases in tests/policy-corpus; the matcher below reads every entry
 * the same way (long options with `=value` or abbreviated as GNU getopt allows, short options
 * alone, with the value attached, or inside a cluster like `-avze`).
 */

export interface OptionTable {
  /** options that run a program or load code of the caller's choosing */
  exec?: readonly string[];
  /** options whose value is a file the program writes */
  write?: readonly string[];
  /** options whose value is a directory the program works in (must stay inside the repository) */
  dir?: readonly string[];
  /** options that use the network */
  network?: readonly string[];
  /** harmless long options that are prefixes of listed ones (`--checkpoint` of `--checkpoint-action`) */
  exact?: readonly string[];
  /** short options may be bundled (`-xzf`), and a value-taking one ends the bundle */
  clusters?: boolean;
  /** the first argument may be a bundle without a dash (`tar xIf prog a.tar`) */
  bareFirstCluster?: boolean;
  /** subcommand (first positional) → its own options; `'*'` in exec marks the subcommand itself */
  subcommands?: Record<string, OptionTable>;
}

export const PROGRAM_OPTIONS: Record<string, OptionTable> = {
  tar: {
    exec: [
      '--to-command',
      '--use-compress-program',
      '-I',
      '--checkpoint-action',
      '--info-script',
      '--new-volume-script',
      '-F',
      '--rsh-command',
      '--rmt-command',
    ],
    dir: ['-C', '--directory'],
    exact: ['--checkpoint'],
    clusters: true,
    bareFirstCluster: true,
  },
  zip: { exec: ['-TT', '--unzip-command'] },
  rsync: { exec: ['-e', '--rsh', '--rsync-path'], clusters: true },
  sort: { exec: ['--compress-program'], write: ['-o', '--output'] },
  // readers that write a log or their output to a file they are given
  tree: { write: ['-o'] },
  less: { write: ['-o', '-O', '--log-file', '--LOG-FILE'], exec: ['--lesskey-src'] },
  split: { exec: ['--filter'] },
  rg: { exec: ['--pre'] },
  sed: { write: ['-w'] },
  gawk: { exec: ['-l', '--load', '-E', '--exec'] },
  awk: { exec: ['-l', '--load', '-E', '--exec'] },
  perl: { exec: ['-M', '-m', '-I', '-d', '-x'], clusters: true },
  ruby: { exec: ['-r', '--require', '-I', '-x'], clusters: true },
  node: {
    exec: ['-r', '--require', '--import', '--loader', '--experimental-loader', '--inspect', '--inspect-brk', '--experimental-policy'],
    network: ['--inspect', '--inspect-brk'],
  },
  env: { dir: ['-C', '--chdir'] },
  xargs: {},
  find: { write: ['-fprint', '-fprint0', '-fprintf', '-fls'] },
  make: { exec: ['-f', '--file', '--makefile', '--eval', '-E'], dir: ['-C', '--directory'] },
  eslint: { exec: ['--rulesdir', '--plugin', '--resolve-plugins-relative-to', '-c', '--config', '--parser', '-f', '--format'] },
  prettier: { exec: ['--plugin', '--config', '--plugin-search-dir'] },
  stylelint: { exec: ['--custom-formatter', '--custom-syntax', '--config'] },
  npm: {
    exec: ['--script-shell', '--node-options', '--shell', '--call', '--userconfig', '--globalconfig'],
    dir: ['--prefix', '-C', '--dir', '--cache'],
  },
  pnpm: { exec: ['--script-shell', '--node-options', '--shell-emulator'], dir: ['--prefix', '-C', '--dir', '--store-dir'] },
  yarn: { exec: ['--script-shell'], dir: ['--cwd', '--prefix', '--modules-folder'] },
  go: {
    subcommands: {
      generate: { exec: ['*'] },
      test: { exec: ['-exec', '-toolexec'] },
      build: { exec: ['-toolexec'] },
      run: { exec: ['-exec', '-toolexec'] },
      vet: { exec: ['-vettool'] },
    },
  },
  git: {
    subcommands: {
      rebase: { exec: ['--exec', '-x'] },
      bisect: { exec: ['run'] },
      grep: { exec: ['-O', '--open-files-in-pager'] },
      diff: { exec: ['--ext-diff', '--textconv'], write: ['--output'] },
      log: { exec: ['--ext-diff', '--textconv'], write: ['--output'] },
      show: { exec: ['--ext-diff', '--textconv'], write: ['--output'] },
      'format-patch': { write: ['-o', '--output-directory'] },
      difftool: { exec: ['*'] },
      submodule: { exec: ['foreach'] },
      commit: { exec: ['--template'] },
      'filter-branch': { exec: ['*'] },
      'for-each-ref': { exec: ['--shell', '--perl', '--python', '--tcl'] },
    },
  },
};

/** One use of a listed option: its class, how it was spelled, and its value when it has one. */
export interface OptionHit {
  kind: 'exec' | 'write' | 'dir' | 'network';
  option: string;
  value?: string;
}

const KINDS = ['exec', 'write', 'dir', 'network'] as const;

/** The listed options `args` uses, per the program's table (and its subcommand's, if any). */
export function optionHits(table: OptionTable, args: readonly string[]): OptionHit[] {
  const hits: OptionHit[] = [];
  let tables: OptionTable[] = [table];
  let sub: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') break;
    if (i === 0 && table.bareFirstCluster && /^[A-Za-z]+$/.test(a)) {
      hits.push(...matchCluster(table, `-${a}`, args[i + 1]));
      continue;
    }
    if (!a.startsWith('-') || a === '-') {
      if (sub === undefined && table.subcommands) {
        sub = a;
        const subTable = table.subcommands[a];
        tables = subTable ? [subTable] : [];
        if (subTable?.exec?.includes('*')) hits.push({ kind: 'exec', option: a });
        continue;
      }
      for (const t of tables) if (t !== table && t.exec?.includes(a)) hits.push({ kind: 'exec', option: `${sub} ${a}` });
      continue;
    }
    for (const t of tables) {
      const found = a.startsWith('--') ? matchLong(t, a, args[i + 1]) : t.clusters ? matchCluster(t, a, args[i + 1]) : matchShort(t, a, args[i + 1]);
      hits.push(...found.map((h) => (t === table ? h : { ...h, option: `${sub} ${h.option}` })));
    }
  }
  return hits;
}

function matchLong(t: OptionTable, a: string, next: string | undefined): OptionHit[] {
  const eq = a.indexOf('=');
  const name = eq < 0 ? a : a.slice(0, eq);
  const out: OptionHit[] = [];
  if (t.exact?.includes(name)) return out;
  for (const kind of KINDS) {
    for (const opt of t[kind] ?? []) {
      if (!opt.startsWith('--')) continue;
      // GNU getopt takes any unambiguous prefix: `--to-comm=sh` is `--to-command=sh`
      if (opt === name || (name.length >= 4 && opt.startsWith(name))) {
        const value = eq < 0 ? next : a.slice(eq + 1);
        out.push({ kind, option: opt, ...(value !== undefined ? { value } : {}) });
      }
    }
  }
  return out;
}

function matchShort(t: OptionTable, a: string, next: string | undefined): OptionHit[] {
  const out: OptionHit[] = [];
  for (const kind of KINDS) {
    for (const opt of t[kind] ?? []) {
      if (opt.startsWith('--')) continue;
      if (a === opt) out.push({ kind, option: opt, ...(next !== undefined ? { value: next } : {}) });
      else if (opt.length === 2 && a.startsWith(opt)) out.push({ kind, option: opt, value: a.slice(2) });
      else if (a.startsWith(opt + '=')) out.push({ kind, option: opt, value: a.slice(opt.length + 1) });
    }
  }
  return out;
}

/** `-avze ssh`: each letter is an option; a value-taking one takes the rest or the next word. */
function matchCluster(t: OptionTable, a: string, next: string | undefined): OptionHit[] {
  const out: OptionHit[] = [];
  const letters = a.slice(1);
  for (let k = 0; k < letters.length; k++) {
    const opt = `-${letters[k]}`;
    for (const kind of KINDS) {
      if (!(t[kind] ?? []).includes(opt)) continue;
      const rest = letters.slice(k + 1);
      const value = rest || next;
      out.push({ kind, option: opt, ...(value !== undefined ? { value } : {}) });
    }
  }
  return out;
}
