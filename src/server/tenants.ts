/**
 * Per-tenant settings for `kiln serve`, from `$KILN_HOME/server/tenants.json` (or --tenants FILE):
 * the repos a tenant may start runs on, how many may run at once, what a day may cost, and how
 * many requests a token may make a minute. A tenant not in the file may read nothing but its own
 * runs and start none.
 */
import { realpathSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { kilnHomeDir } from '../policy/trust.js';
import { UsageError } from '../shared/errors.js';

const Tenant = z.object({
  /** absolute paths of the git repositories this tenant may start runs on */
  repos: z.array(z.string().refine(isAbsolute, 'repos must be absolute paths')).default([]),
  maxConcurrentRuns: z.number().int().positive().default(5),
  /** the USD a day's runs may cost; a run's own --max-usd is reserved while it runs */
  usdPerDay: z.number().positive().default(50),
  requestsPerMinute: z.number().int().positive().default(120),
  /**
   * the models its runs may use, as given in a request ("scripted:FILE" included); unset: any.
   * A scripted model names a file the worker reads: a shared server should list them.
   */
  models: z.array(z.string().min(1)).optional(),
});
export type TenantConfig = z.infer<typeof Tenant>;

const TenantsFile = z.object({ tenants: z.record(z.string(), Tenant) });

export function tenantsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(kilnHomeDir(env), 'server', 'tenants.json');
}

export function loadTenants(file: string): Map<string, TenantConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw new UsageError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  const parsed = TenantsFile.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UsageError(
      `${file}: ${i.path.join('.')}: ${i.message} (expected {"tenants": {"NAME": {"repos": ["/abs/repo"], "maxConcurrentRuns": 5, "usdPerDay": 50}}})`,
    );
  }
  return new Map(Object.entries(parsed.data.tenants).map(([k, v]) => [k, { ...v, repos: v.repos.map(canonicalPath) }]));
}

/** A path as the file system sees it, so a symlink or "a/../b" cannot slip past the allowlist. */
export function canonicalPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

export function repoAllowed(t: TenantConfig | undefined, repo: string): boolean {
  return !!t && t.repos.includes(canonicalPath(repo));
}

export const DEFAULT_TENANT: TenantConfig = Tenant.parse({});
