import type { ShellCommand } from '../shell/parse.js';

/*
 * Shapes whose only use in an agent's command is to hide what runs from a reader (or a policy):
 * a program name assembled when it runs, a globbed or escape-coded program path, `$IFS` as a
 * separator, prompt expansion of a variable. They are refused outright, with the reason.
 */

/** Why the command hides what it runs, or null. */
export function obfuscation(c: ShellCommand): string | null {
  for (const w of [...c.words, ...c.assigns, ...c.redirects.map((r) => r.target)]) {
    if (w.obfuscation) return `The command uses ${w.obfuscation}: a way to hide what runs, which Kiln refuses.`;
  }
  const prog = c.words[0];
  if (!prog) return null;
  if (prog.assembled) return `The program name ${prog.raw} is assembled from pieces when it runs: a way to hide which program runs, which Kiln refuses.`;
  if (prog.dynamic && /^(\$\(|`)/.test(prog.raw))
    return `The program name is the output of ${prog.raw}: what runs is hidden until it runs, which Kiln refuses.`;
  if (prog.glob && !prog.dynamic) return `The program path ${prog.raw} is a glob: a way to name a program without spelling it, which Kiln refuses.`;
  if (prog.escaped) return `The program name ${prog.raw} is spelled in escape codes: a way to hide which program runs, which Kiln refuses.`;
  return null;
}

const DECODE_FLAGS = /^(-d|--decode|-D|-r|--revert|-[a-zA-Z]*d[a-zA-Z]*)$/;

/** A program that turns encoded text back into text: base64 -d, xxd -r, openssl enc -d, rev... */
export function isDecoder(argv: readonly string[]): boolean {
  const [prog = '', ...args] = argv;
  const name = prog.split('/').pop()!;
  if (['base64', 'base32', 'basenc', 'xxd', 'openssl'].includes(name)) return args.some((a) => DECODE_FLAGS.test(a));
  if (['uudecode', 'rev', 'gunzip', 'zcat', 'bzcat', 'xzcat', 'unxz', 'bunzip2'].includes(name)) return true;
  if (name === 'gzip' || name === 'xz' || name === 'bzip2') return args.some((a) => /^-[a-zA-Z]*d/.test(a) || a === '--decompress');
  if (name === 'tr') return args.filter((a) => !a.startsWith('-')).length >= 2;
  // printf '\x63\x75…': text spelled as codes
  if (name === 'printf' || name === 'echo') return args.some((a) => /\\(x[0-9a-fA-F]|[0-7]{3}|u[0-9a-fA-F]{4})/.test(a));
  return false;
}
