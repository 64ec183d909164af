/**
 * Which of the repo's checks a command ran, judged by what runs rather than by the exact text:
 * `make  lint`, `'make' lint` and the printed check line `python3 -m unittest -v && python3
 * tools/style.py` all run the checks they contain. A check counts when its simple commands
 * appear, in order and next to each other, among the command's own top-level simple commands.
 * The stop gate asks only that the checks ran since the last edit (the verifier runs them again
 * and judges the result), so a check at the start of a command counts even when the command
 * failed; one further along counts only when the whole command succeeded, since an earlier
 * failure in an `&&` chain would have kept it from running.
 */
import { parseShell, type ShellCommand } from '../shell/parse.js';

type Argv = string[];

async function simpleCommands(src: string): Promise<Argv[] | undefined> {
  let cmds: ShellCommand[];
  try {
    cmds = await parseShell(src);
  } catch {
    return undefined;
  }
  // words inside $(...) or a background job are not the check running in front of the user
  if (cmds.some((c) => c.background || c.opaque || c.words.some((w) => w.dynamic))) return undefined;
  return cmds.filter((c) => c.via.length === 0 && c.words.length > 0).map((c) => [...c.assigns.map((a) => a.value), ...c.words.map((w) => w.value)]);
}

const same = (a: Argv, b: Argv) => a.length === b.length && a.every((w, i) => w === b[i]);

/** Where the check's simple commands start inside the command's, or -1. */
function findRun(hay: Argv[], needle: Argv[]): number {
  for (let i = 0; i + needle.length <= hay.length; i++) if (needle.every((n, j) => same(n, hay[i + j]!))) return i;
  return -1;
}

export async function checksCovered(command: string, checks: readonly string[], succeeded: boolean): Promise<string[]> {
  const text = command.trim();
  const ran = await simpleCommands(text);
  const covered: string[] = [];
  for (const check of checks) {
    if (check.trim() === text) {
      covered.push(check);
      continue;
    }
    const want = await simpleCommands(check.trim());
    if (!ran || !want?.length) continue;
    const at = findRun(ran, want);
    if (at === 0 || (at > 0 && succeeded)) covered.push(check);
  }
  return covered;
}
