import { mkdtempSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { defaultPolicyConfig, type PolicyContext } from '../../../src/policy/index.js';

export interface TempRepo {
  dir: string;
  file(rel: string, content?: string): void;
  link(rel: string, target: string): void;
  ctx(extra?: Partial<PolicyContext>): PolicyContext;
  cleanup(): void;
}

export function tempRepo(): TempRepo {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'kiln-policy-')));
  return {
    dir,
    file(rel, content = 'x\n') {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeFileSync(join(dir, rel), content);
    },
    link(rel, target) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      symlinkSync(target, join(dir, rel));
    },
    ctx: (extra = {}) => ({ workspace: dir, config: defaultPolicyConfig(), mode: 'default', checks: [], home: '/home/kiln', ...extra }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
