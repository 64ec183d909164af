import { protectedSet, type ProtectedSet } from '../checks/protected.js';
import { isExecutableConfig, isSensitivePath, matchesAny } from './globs.js';
import { resolveWorkspacePath, type ResolvedPath } from './paths.js';
import type { PolicyContext } from './types.js';
import { allow, ask, deny, type Verdict } from './verdict.js';

// Writing here changes the machine, not the project.
const SYSTEM_DIRS = /^\/(?:etc|usr|bin|sbin|lib|lib32|lib64|libx32|boot|dev|proc|sys|var|root|opt|srv|snap|run)(?:\/|$)/;
const HARMLESS_DEVICES = new Set(['/dev/null', '/dev/stdout', '/dev/stderr', '/dev/tty', '/dev/zero']);

export function isSystemPath(abs: string): boolean {
  return SYSTEM_DIRS.test(abs) && !HARMLESS_DEVICES.has(abs) && !/^\/dev\/fd\//.test(abs);
}

export function isHarmlessDevice(abs: string): boolean {
  return HARMLESS_DEVICES.has(abs) || /^\/dev\/fd\/\d+$/.test(abs);
}

function sensitiveAbs(ctx: PolicyContext, r: ResolvedPath): boolean {
  if (r.ok) return isSensitivePath(r.rel, ctx.config);
  return r.abs !== undefined && isSensitivePath(r.abs, ctx.config);
}

/** Reading a file: sensitive files and anything outside the worktree are refused. */
export function judgeRead(ctx: PolicyContext, p: string, r: ResolvedPath = resolveWorkspacePath(ctx.workspace, p)): Verdict & { rel?: string } {
  if (sensitiveAbs(ctx, r))
    return deny('path.sensitive', `${p} may hold credentials and is never read; use .env.example or ask the user for the value's name.`);
  if (!r.ok) return deny(r.rule, r.reason);
  return { ...allow('path.read', `${r.rel || '.'} is inside the repository.`, true), rel: r.rel };
}

// one compiled set per policy, checks and pinned list: judged on every write of a run
const sets = new WeakMap<PolicyContext['config'], Map<string, ProtectedSet>>();
function protectedFor(ctx: PolicyContext): ProtectedSet {
  const key = JSON.stringify([ctx.checks, ctx.protect ?? []]);
  let byKey = sets.get(ctx.config);
  if (!byKey) sets.set(ctx.config, (byKey = new Map()));
  let set = byKey.get(key);
  if (!set) byKey.set(key, (set = protectedSet(ctx.config.protected, ctx.checks, { unprotect: ctx.config.unprotect, pinned: ctx.protect ?? [] })));
  return set;
}

/**
 * Writing a file: the order is sensitive, outside, git internals, writeAllow,
 * protected, executable configuration. `tool` names the grant key for asks.
 */
export function judgeWrite(ctx: PolicyContext, p: string, tool: string, r: ResolvedPath = resolveWorkspacePath(ctx.workspace, p)): Verdict & { rel?: string } {
  if (sensitiveAbs(ctx, r)) return deny('path.sensitive', `${p} may hold credentials and is never written.`);
  if (!r.ok) return deny(r.rule, r.reason);
  const rel = r.rel;
  if (rel === '') return deny('path.invalid', 'The repository root itself is not a file.');
  if ((rel === '.git' || rel.startsWith('.git/')) && !rel.startsWith('.git/hooks/')) {
    return deny('write.git-internals', `${rel} is git's own data; change the repository through files and git commands instead.`);
  }
  if (!matchesAny(rel, ctx.config.writeAllow)) {
    return deny('write.not-allowed', `${rel} is outside the paths this repository lets the agent write (writeAllow).`);
  }
  const executable = isExecutableConfig(rel);
  if (!ctx.allowProtectedWrites && protectedFor(ctx).isProtected(rel)) {
    return deny('write.protected', `${rel} is protected (tests and CI are judged, not changed); fix the code under test instead.`);
  }
  if (executable) {
    return ask('write.executable-config', `${rel} configures what runs on developers' machines or in CI; a person must approve this change.`, `${tool}:${rel}`);
  }
  return { ...allow('write.allowed', `${rel} may be written.`), rel };
}

/** Also used by commands: a write to a path given in a command, resolved from its cwd. */
export function judgeCommandWrite(ctx: PolicyContext, shown: string, abs: string): Verdict {
  if (isHarmlessDevice(abs)) return allow('command.write-device', `${shown} is a harmless device.`, true);
  const r = resolveWorkspacePath(ctx.workspace, abs);
  if (!r.ok && !sensitiveAbs(ctx, r) && r.abs !== undefined && isSystemPath(r.abs)) {
    return deny('command.system-write', `The command writes ${shown}, a system path outside the repository.`);
  }
  if (!r.ok && !sensitiveAbs(ctx, r) && r.rule === 'path.outside-workspace') {
    return ask('command.outside-write', `The command writes ${shown}, outside the repository; only the repository is writable.`, 'run_command:write-outside');
  }
  const v = judgeWrite(ctx, abs, 'run_command', r);
  if (v.decision === 'allow' && v.rel !== undefined && /(^|\/)package\.json$/.test(v.rel)) {
    // a shell edit cannot be inspected for new install scripts, unlike the edit tool
    return ask(
      'write.lifecycle-script',
      `The command changes ${v.rel}, whose install scripts run on npm install; use the edit tool or get approval.`,
      `run_command:write ${v.rel}`,
    );
  }
  return v;
}

/** A path read by a command. */
export function judgeCommandRead(ctx: PolicyContext, shown: string, abs: string): Verdict {
  if (isHarmlessDevice(abs)) return allow('command.read-device', `${shown} is a harmless device.`, true);
  const r = resolveWorkspacePath(ctx.workspace, abs);
  if (sensitiveAbs(ctx, r)) return deny('command.sensitive-path', `The command reads ${shown}, which may hold credentials.`);
  if (!r.ok) {
    if (r.rule === 'path.outside-workspace')
      return ask('command.outside-path', `The command reads ${shown}, outside the repository.`, 'run_command:read-outside');
    return deny(r.rule, r.reason);
  }
  return allow('command.path', `${shown} is inside the repository.`, true);
}
