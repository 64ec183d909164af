// npm runs these on install/publish: a new one is code that runs on every developer's machine.
const LIFECYCLE = [
  'preinstall',
  'install',
  'postinstall',
  'prepare',
  'preprepare',
  'postprepare',
  'prepublish',
  'prepublishOnly',
  'prepack',
  'postpack',
  'dependencies',
];

function scriptsOf(text: string | null): Record<string, unknown> | null {
  if (text === null) return {};
  try {
    const pkg = JSON.parse(text) as { scripts?: Record<string, unknown> };
    return pkg && typeof pkg === 'object' ? (pkg.scripts ?? {}) : null;
  } catch {
    return null;
  }
}

/**
 * The lifecycle script a package.json change adds or alters, or null. When the
 * new text is not JSON (an edit's fragment), any lifecycle key in it counts.
 */
export function lifecycleScriptChange(before: string | null, after: string): string | null {
  const b = scriptsOf(before) ?? {};
  const a = scriptsOf(after);
  if (a === null) {
    const m = new RegExp(`["'](${LIFECYCLE.join('|')})["']\\s*:`).exec(after);
    return m ? m[1]! : null;
  }
  for (const k of LIFECYCLE) if (a[k] !== undefined && a[k] !== b[k]) return k;
  return null;
}
