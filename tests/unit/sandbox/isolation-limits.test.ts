/**
 * What a command runs as and with: an unprivileged uid in a user namespace, no shared kernel
 * keyring, capped /tmp and /dev/shm, a memory limit; the seccomp program itself is checked here.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createSandbox, probeSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { dataLimit, defaultLimits } from '../../../src/sandbox/limits.js';
import { keyringFilter, keyringFilterFile, KEYRING_SYSCALLS } from '../../../src/sandbox/seccomp.js';
import { cleanupTempDirs, tempDir, uniqueMarker } from './helpers.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});
afterAll(cleanupTempDirs);

const run = (command: string) => sandbox.run(command, { workspace: tempDir('ws'), timeoutMs: 15_000 });
const hasKeyctl = existsSync('/usr/bin/keyctl') || existsSync('/bin/keyctl');

describe('the kernel keyring is not shared with the host', () => {
  test.runIf(hasKeyctl)("a key in the session keyring the sandbox starts from is not readable inside with Kiln's filter; it is without", () => {
    const secret = uniqueMarker('key');
    const filter = keyringFilterFile()!;
    // A session keyring holding one key, and bwrap started from it the way the worker starts it
    // (a user namespace, no capabilities) — once with the filter the sandbox passes, once without.
    const bwrap = '/usr/bin/bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-user --uid 1000 --gid 1000 --cap-drop ALL';
    const script = [
      `id=$(keyctl add user kiln-test ${secret} @s)`,
      'echo "host: $(keyctl print $id)"',
      `${bwrap} --seccomp 4 -- sh -c "echo filtered: \\$(keyctl print $id 2>&1)" 4<'${filter}'`,
      `${bwrap} -- sh -c "echo unfiltered: \\$(keyctl print $id 2>&1)"`,
    ].join('\n');
    const out = execFileSync('keyctl', ['session', '-', 'sh', '-c', script], { encoding: 'utf8' });
    expect(out).toContain(`host: ${secret}`);
    expect(out).toMatch(/filtered: keyctl_read_alloc: Operation not permitted/);
    expect(out).not.toMatch(new RegExp(`^filtered: .*${secret}`, 'm'));
    expect(out).toContain(`unfiltered: ${secret}`);
  });

  test.runIf(hasKeyctl)('a key cannot be added from inside, so nothing planted there reaches the host', async () => {
    const name = uniqueMarker('planted');
    const r = await run(`keyctl add user ${name} value @s; echo "add:$?"; keyctl add user ${name} value @u; echo "addu:$?"`);
    expect(r.output).toMatch(/add:[1-9]/);
    expect(r.output).toMatch(/addu:[1-9]/);
    const host = execFileSync('sh', ['-c', 'keyctl show @s 2>&1; keyctl show @u 2>&1; true'], { encoding: 'utf8' });
    expect(host).not.toContain(name);
  });

  test('control: other syscalls pass the filter (files, processes, sockets)', async () => {
    const r = await run(
      'echo hi > f && cat f && sh -c "exit 3"; echo "rc:$?"; node -e "require(\'net\').createServer().listen(0,\'127.0.0.1\',function(){console.log(\'listening\');this.close()})"',
    );
    expect(r.output).toContain('hi\nrc:3');
    expect(r.output).toContain('listening');
  });

  test('the program: for each ABI of the host, the three keyring syscalls map to EPERM and nothing else', () => {
    const prog = keyringFilter('x64')!;
    expect(prog.length % 8).toBe(0);
    // interpret the classic BPF the way the kernel does, over a few syscalls
    const evalFilter = (arch: number, nr: number): number => {
      let acc = 0;
      for (let pc = 0; pc < prog.length / 8;) {
        const code = prog.readUInt16LE(pc * 8);
        const jt = prog.readUInt8(pc * 8 + 2);
        const jf = prog.readUInt8(pc * 8 + 3);
        const k = prog.readUInt32LE(pc * 8 + 4);
        if (code === 0x20) acc = k === 4 ? arch : nr;
        else if (code === 0x54) acc = (acc & k) >>> 0;
        else if (code === 0x15) {
          pc += 1 + (acc === k ? jt : jf);
          continue;
        } else if (code === 0x06) return k;
        else throw new Error(`unexpected opcode ${code}`);
        pc++;
      }
      throw new Error('fell off the program');
    };
    const [x64, i386] = KEYRING_SYSCALLS.x64!;
    for (const nr of x64!.nrs) expect(evalFilter(x64!.audit, nr)).toBe(0x00050001);
    for (const nr of x64!.nrs) expect(evalFilter(x64!.audit, nr | 0x40000000)).toBe(0x00050001); // x32
    for (const nr of i386!.nrs) expect(evalFilter(i386!.audit, nr)).toBe(0x00050001);
    for (const nr of [0, 1, 59, 247, 251, 435]) expect(evalFilter(x64!.audit, nr)).toBe(0x7fff0000);
    // i386's 248-250 are other syscalls: allowed
    for (const nr of [248, 249, 250]) expect(evalFilter(i386!.audit, nr)).toBe(0x7fff0000);
    expect(keyringFilter('riscv64')).toBeUndefined();
  });
});

describe('an unprivileged user in a user namespace', () => {
  test('commands run as a non-root uid with no capabilities; the worktree stays writable', async () => {
    const r = await run('id -u; grep CapEff /proc/self/status; echo w > w.txt && echo "write:$?"');
    if (process.getuid?.() === 0) expect(r.output).toMatch(/^1000\n/);
    expect(r.output).toMatch(/CapEff:\s+0000000000000000/);
    expect(r.output).toContain('write:0');
  });
});

describe('rlimits, set by the launcher before bwrap', () => {
  const MiB = 1024 * 1024;
  const limits = { fileSizeBytes: 3 * MiB, openFiles: 256, addressSpaceBytes: 48 * 1024 * MiB };
  const limitLine = (out: string, name: string) => new RegExp(`${name}\\s+(\\d+)\\s+(\\d+)`).exec(out)?.slice(1).map(Number);

  test.each(['bwrap', 'off'] as const)('%s: file size, open files, address space and core dumps are capped, soft and hard', async (mode) => {
    const sb = await createSandbox({ mode, limits });
    const r = await sb.run('cat /proc/self/limits', { workspace: tempDir('ws'), timeoutMs: 15_000 });
    expect(limitLine(r.output, 'Max file size')).toEqual([3 * MiB, 3 * MiB]);
    expect(limitLine(r.output, 'Max open files')).toEqual([256, 256]);
    expect(limitLine(r.output, 'Max address space')).toEqual([48 * 1024 * MiB, 48 * 1024 * MiB]);
    expect(limitLine(r.output, 'Max core file size')).toEqual([0, 0]);
  });

  test('attack: a command cannot write past the file size cap, nor raise a hard limit; control: under the cap it writes', async () => {
    const sb = await createSandbox({ mode: 'bwrap', limits });
    const r = await sb.run(
      [
        'head -c 1M /dev/zero > small && echo "small:$?"',
        '(head -c 8M /dev/zero > big) 2>/dev/null; echo "big:$? $(stat -c %s big)"',
        'ulimit -n 4096 2>/dev/null; echo "raise:$?"',
        'ulimit -H -f unlimited 2>/dev/null; echo "unlimit:$?"',
      ].join('\n'),
      { workspace: tempDir('ws'), timeoutMs: 15_000 },
    );
    expect(r.output).toContain('small:0');
    // SIGXFSZ ends the writer at the cap, and the file holds no more than it
    expect(r.output).toMatch(new RegExp(`big:[1-9]\\d* ${3 * MiB}\\n`));
    expect(r.output).toMatch(/raise:[1-9]/);
    expect(r.output).toMatch(/unlimit:[1-9]/);
  });
});

describe('capped scratch space and memory', () => {
  test('/tmp and /dev/shm are size-limited tmpfs: writing past the cap fails; writing under it works', async () => {
    const small = await createSandbox({ mode: 'bwrap', limits: { tmpfsBytes: 8 * 1024 * 1024, shmBytes: 4 * 1024 * 1024 } });
    const r = await small.run(
      [
        'head -c 2M /dev/zero > /tmp/ok && echo "tmp-small:$?"',
        'head -c 16M /dev/zero > /tmp/big; echo "tmp-big:$?"',
        'head -c 1M /dev/zero > /dev/shm/ok && echo "shm-small:$?"',
        'head -c 8M /dev/zero > /dev/shm/big; echo "shm-big:$?"',
        "df -k /tmp /dev/shm | awk 'NR>1 {print $6, $2}'",
      ].join('\n'),
      { workspace: tempDir('ws'), timeoutMs: 15_000 },
    );
    expect(r.output).toContain('tmp-small:0');
    expect(r.output).toMatch(/tmp-big:[1-9]/);
    expect(r.output).toContain('shm-small:0');
    expect(r.output).toMatch(/shm-big:[1-9]/);
    expect(r.output).toMatch(/No space left on device/);
    expect(r.output).toContain('/tmp 8192');
    expect(r.output).toContain('/dev/shm 4096');
  });

  test('without a memory cgroup, allocating past the memory budget fails (RLIMIT_DATA); WebAssembly and allocations under it work', async () => {
    const MiB = 1024 * 1024;
    // no cgroup membership to find: the host's cgroups stay out of it, RLIMIT_DATA is the limit
    const noCgroup = await createSandbox({
      mode: 'bwrap',
      limits: { memoryBytes: 512 * MiB },
      cgroupDeps: { root: tempDir('no-cgroup'), procSelfCgroup: '/nonexistent/cgroup' },
    });
    const probe = (what: string) => `node -e "try { ${what}; console.log('ok') } catch (e) { console.log('refused', e.constructor.name) }" 2>&1 | tail -1`;
    const r = await noCgroup.run(
      [
        `echo "wasm: $(${probe('for (let i = 0; i < 3; i++) new WebAssembly.Memory({ initial: 16 })')})"`,
        `echo "under: $(${probe(`Buffer.alloc(${128 * MiB}, 1)`)})"`,
        `echo "over: $(${probe(`const a = []; for (let i = 0; i < 8; i++) a.push(Buffer.alloc(${128 * MiB}, 1))`)})"`,
        'grep "Max data size" /proc/self/limits',
      ].join('\n'),
      { workspace: tempDir('ws'), timeoutMs: 30_000 },
    );
    expect(r.output).toContain('wasm: ok');
    expect(r.output).toContain('under: ok');
    expect(r.output).toMatch(/over: refused RangeError/);
    expect(r.output).toMatch(new RegExp(`Max data size\\s+${512 * MiB}\\s+${512 * MiB}`));
    expect(dataLimit(defaultLimits(), false)).toBe(defaultLimits().memoryBytes);
    expect(dataLimit(defaultLimits(), true)).toBeUndefined();
  });

  test('the probe reports each limit, and what it could not set', async () => {
    const probe = await probeSandbox('/usr/bin/bwrap');
    const limits = probe.checks.find((c) => c.name === 'limits')!.detail;
    expect(limits).toMatch(/pids|processes/);
    expect(limits).toMatch(/memory/);
    expect(limits).toMatch(/address space \d+/);
    expect(limits).toMatch(/\/dev\/shm \d+ bytes/);
    for (const name of [
      'unprivileged user',
      'kernel keyring is not shared',
      "the user's main checkout is hidden",
      'host files others may not read are hidden',
      'sensitive files in the worktree are masked',
      "setup network does not reach the host's loopback",
    ]) {
      expect(probe.checks.map((c) => c.name)).toContain(name);
    }
    expect(probe.ok).toBe(true);
  });
});
