/** The hardened git module with every command a test's code runs noted in `ran`: for vi.mock factories. */
type GitModule = typeof import('../../src/git/run.js');

export async function countingGit(importOriginal: () => Promise<GitModule>, ran: string[][]): Promise<GitModule> {
  const real = await importOriginal();
  return {
    ...real,
    hardenedGit: async (...a: Parameters<GitModule['hardenedGit']>) => {
      const g = await real.hardenedGit(...a);
      return { ...g, run: (args: readonly string[]) => (ran.push([...args]), g.run(args)) };
    },
  };
}
