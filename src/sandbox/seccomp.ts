import { scratchFile } from './scratch-files.js';

/**
 * A seccomp filter that refuses the kernel keyring syscalls (add_key, request_key, keyctl) with
 * EPERM. A user namespace gives the sandbox its own user keyring, but not its own session keyring:
 * measured with bwrap 0.8 on Linux 6.x, a key the worker added to its session keyring was readable
 * inside (`keyctl print`), and a key added inside appeared on the host. bwrap has no option to
 * start a fresh session keyring; denying the syscalls closes both directions.
 *
 * The program is classic BPF over `struct seccomp_data` (nr at offset 0, arch at offset 4), built
 * here because it is eight instructions per architecture; the tests run it through the real kernel.
 */

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_AND_K = 0x54;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
/** x32 syscalls on x86_64 carry this bit and otherwise share the x86_64 numbers */
const X32_SYSCALL_BIT = 0x40000000;

interface ArchKeySyscalls {
  audit: number;
  /** add_key, request_key, keyctl */
  nrs: [number, number, number];
  mask?: number;
}

/** Every ABI a process on this host may call the kernel with, per Node architecture. */
export const KEYRING_SYSCALLS: Record<string, ArchKeySyscalls[]> = {
  x64: [
    { audit: 0xc000003e, nrs: [248, 249, 250], mask: ~X32_SYSCALL_BIT >>> 0 },
    { audit: 0x40000003, nrs: [286, 287, 288] }, // i386 compat
  ],
  arm64: [
    { audit: 0xc00000b7, nrs: [217, 218, 219] },
    { audit: 0x40000028, nrs: [309, 310, 311] }, // arm compat
  ],
};

type Insn = [code: number, jt: number, jf: number, k: number];

/** The filter for one host architecture, or undefined when Kiln does not know its syscall numbers. */
export function keyringFilter(arch: string = process.arch): Buffer | undefined {
  const abis = KEYRING_SYSCALLS[arch];
  if (!abis) return undefined;
  const dispatch: Insn[] = [[BPF_LD_W_ABS, 0, 0, 4]];
  const blocks: Insn[][] = abis.map((abi) => {
    const b: Insn[] = [[BPF_LD_W_ABS, 0, 0, 0]];
    if (abi.mask !== undefined) b.push([BPF_AND_K, 0, 0, abi.mask]);
    abi.nrs.forEach((nr, i) => b.push([BPF_JEQ_K, abi.nrs.length - i, 0, nr]));
    b.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
    b.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
    return b;
  });
  // dispatch: one JEQ per ABI jumping to its block, then ALLOW for an unknown ABI (none exists on these hosts)
  const dispatchLen = 1 + abis.length + 1;
  let blockStart = dispatchLen;
  abis.forEach((abi, i) => {
    const here = 1 + i;
    dispatch.push([BPF_JEQ_K, blockStart - here - 1, 0, abi.audit]);
    blockStart += blocks[i]!.length;
  });
  dispatch.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  const prog = [...dispatch, ...blocks.flat()];
  const buf = Buffer.alloc(prog.length * 8);
  prog.forEach(([code, jt, jf, k], i) => {
    buf.writeUInt16LE(code, i * 8);
    buf.writeUInt8(jt, i * 8 + 2);
    buf.writeUInt8(jf, i * 8 + 3);
    buf.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return buf;
}

/** The compiled filter written once per process to a private file, or null on an unknown architecture. */
export function keyringFilterFile(): string | null {
  const prog = keyringFilter();
  return prog ? scratchFile('keyring.bpf', prog) : null;
}
