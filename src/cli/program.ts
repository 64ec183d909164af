/**
 * What every `kiln` entry shares: the program's name, version and help layout, and the one
 * top-level error handler that prints one line (the stack only with KILN_DEBUG=1); bad input exits 2.
 */
import { Command, CommanderError } from 'commander';
import { exitCodeFor } from '../shared/errors.js';
import { KILN_VERSION } from '../shared/version.js';
import { settings } from '../settings.js';

/** commander's collector for a repeatable option */
export const collect = (v: string, prev: string[] = []) => [...prev, v];

export function newProgram(): Command {
  const program: Command = new Command('kiln')
    .description('Run AI coding tasks as durable Temporal workflows')
    .version(KILN_VERSION, '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s), outputError: (s, write) => write(oneLineError(s, subcommandOf(process.argv, program))) })
    // the command list shows name, arguments and a one-line summary; `kiln CMD --help` has the rest
    .configureHelp({ subcommandTerm: (c) => [c.name(), ...c.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`))].join(' ') });
  return program;
}

export async function runProgram(program: Command, argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // help and version are not errors; commander already printed its message
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') return;
      process.exitCode = 2;
      return;
    }
    const code = exitCodeFor(err);
    const msg = err instanceof Error ? err.message : String(err);
    process.stderr.write(`kiln: ${msg.split('\n')[0]}\n`);
    if (settings().debug && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = code;
  }
}

/** commander's "error: …" plus its suggestion lines → one line that says where help is. */
function oneLineError(msg: string, sub?: string): string {
  const text = msg
    .replace(/^error: /, '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ');
  return `kiln: ${text} (see \`kiln ${sub ? `${sub} ` : ''}--help\`)\n`;
}

/** The (sub)command a command line names, for the help pointer: `kiln reject …` → "reject". */
function subcommandOf(argv: string[], program: Command): string | undefined {
  const words: string[] = [];
  for (const a of argv.slice(2)) {
    if (a.startsWith('-')) break;
    words.push(a);
    if (!['policy', 'sandbox'].includes(a)) break;
  }
  const known = new Set(program.commands.map((c) => c.name()));
  return words[0] && known.has(words[0]) ? words.join(' ') : undefined;
}
