/**
 * The kept sandbox tells a command's result before its helper has checked the sandbox, and
 * takes the sandbox for the next command only once the check said clean. A stand-in helper (plain
 * bash, no bwrap: what is tested is the worker's side of the protocol) says whatever the test's
 * command makes it say, with the nonce the worker drew.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { tmpdir } from 'node:os';
import { CHECK_WAIT_MS, KeptSandbox, keptSandbox } from '../../../src/sandbox/kept-sandbox.js';

const HELPER = `while IFS= read -r -d '' n <&6 && IFS= read -r -d '' c <&6; do eval "$c"; done`;

const made: KeptSandbox[] = [];
afterEach(() => {
  for (const s of made.splice(0)) s.discard();
});

function standIn(onGone: (s: KeptSandbox) => void = () => undefined): KeptSandbox {
  const s = new KeptSandbox(
    'key',
    'marks',
    { pids: false, memory: false },
    { argv: ['/bin/bash', '-c', HELPER], env: { PATH: '/usr/bin:/bin' }, cwd: tmpdir(), bwrapStatus: false },
    onGone,
  );
  made.push(s);
  return s;
}

const run = (s: KeptSandbox, command: string) => s.run(command, { timeoutMs: 10_000 });

describe("the kept sandbox's check after a command", () => {
  test('control: the result comes first; the sandbox is taken again once the check said clean', async () => {
    const s = standIn();
    const r = await run(s, `echo out; printf '\\0kiln-kept %s 3\\n' "$n"; sleep 0.3; printf '\\0kiln-checked %s 1\\n' "$n"`);
    expect(r).toMatchObject({ exitCode: 3, output: 'out\n' });
    // told before the check: the sandbox is not free until it comes
    expect(r.durationMs).toBeLessThan(300);
    expect(s.available).toBe(false);
    await s.whenChecked();
    expect(s.available).toBe(true);
    expect(await run(s, `printf '\\0kiln-kept %s 0\\n\\0kiln-checked %s 1\\n' "$n" "$n"`)).toMatchObject({ exitCode: 0 });
  });

  test('the next reader of the worktree waits for the check and gets the same sandbox, not a new one', async () => {
    const workspace = `/kiln-test-worktree-${process.pid}`;
    const made: KeptSandbox[] = [];
    const take = () =>
      keptSandbox(
        workspace,
        () => ({ key: 'key', marks: 'marks' }),
        (onGone) => {
          made.push(standIn(onGone));
          return made[made.length - 1]!;
        },
      );
    const first = (await take())!;
    await run(first, `printf '\\0kiln-kept %s 0\\n' "$n"; sleep 0.3; printf '\\0kiln-checked %s 1\\n' "$n"`);
    expect(await take()).toBe(first);
    expect(made).toHaveLength(1);
  });

  test('attack: a check that says unclean lets the sandbox go', async () => {
    const s = standIn();
    await run(s, `printf '\\0kiln-kept %s 0\\n' "$n"; printf '\\0kiln-checked %s 0\\n' "$n"`);
    await s.whenChecked();
    expect(s.available).toBe(false);
    expect(s.done).toBe(true);
  });

  test('attack: output between the end and the check (something outlived the command) lets the sandbox go', async () => {
    const s = standIn();
    const r = await run(s, `printf '\\0kiln-kept %s 0\\n' "$n"; echo late; printf '\\0kiln-checked %s 1\\n' "$n"`);
    expect(r.output).toBe('');
    await s.whenChecked();
    expect(s.done).toBe(true);
  });

  test('attack: a check line without the nonce does not count', async () => {
    const s = standIn();
    await run(s, `printf '\\0kiln-kept %s 0\\n' "$n"; printf '\\0kiln-checked %s 1\\n' 00000000000000000000000000000000`);
    await s.whenChecked();
    expect(s.done).toBe(true);
  });

  test(
    'attack: a check that never comes (a stopped helper) lets the sandbox go after the wait',
    async () => {
      const s = standIn();
      await run(s, `printf '\\0kiln-kept %s 0\\n' "$n"`);
      expect(s.available).toBe(false);
      const t = Date.now();
      await s.whenChecked();
      expect(Date.now() - t).toBeGreaterThan(CHECK_WAIT_MS - 1000);
      expect(s.done).toBe(true);
    },
    CHECK_WAIT_MS + 10_000,
  );
});
