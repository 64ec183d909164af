/**
 * Bearer tokens for `kiln serve`: `kiln token create` prints one once; only its SHA-256 is kept
 * (a token is 32 random bytes, so a fast hash is enough: nothing to guess), in
 * `$KILN_HOME/server/tokens.json`, mode 0600.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { kilnHomeDir } from '../policy/trust.js';
import { UsageError } from '../shared/errors.js';

const ROLES = ['viewer', 'runner', 'approver'] as const;
type Role = (typeof ROLES)[number];

/** What each role may do; an approver does not start runs and a runner does not approve them. */
const PERMISSIONS = {
  viewer: ['read'],
  runner: ['read', 'start', 'cancel'],
  approver: ['read', 'approve'],
} as const satisfies Record<Role, readonly string[]>;
export type Permission = (typeof PERMISSIONS)[Role][number];

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const TOKEN_PREFIX = 'kiln_';

const TokenRecord = z.object({
  id: z.string(),
  tenant: z.string(),
  user: z.string(),
  role: z.enum(ROLES),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.string(),
  revokedAt: z.string().optional(),
});
export type TokenRecord = z.infer<typeof TokenRecord>;
const TokenFile = z.object({ tokens: z.array(TokenRecord) });

/** Who a request is: what the server attributes every write to. */
export interface Identity {
  tokenId: string;
  tenant: string;
  user: string;
  role: Role;
}

export function tokensPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(kilnHomeDir(env), 'server', 'tokens.json');
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export class TokenStore {
  constructor(readonly file: string) {}

  list(): TokenRecord[] {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const parsed = TokenFile.safeParse(JSON.parse(text));
    if (!parsed.success) throw new UsageError(`${this.file}: not a Kiln token file (${parsed.error.issues[0]?.message}); fix or remove it`);
    return parsed.data.tokens;
  }

  private save(tokens: TokenRecord[]): void {
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ tokens }, null, 2) + '\n', { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.file);
  }

  /** Returns the secret: the only time it exists outside the caller's hands. */
  create(o: { tenant: string; user: string; role?: string }): { token: string; record: TokenRecord } {
    if (!NAME_RE.test(o.tenant)) throw new UsageError(`--tenant ${o.tenant}: use letters, digits, ".", "_", "@" or "-" (at most 64)`);
    if (!NAME_RE.test(o.user)) throw new UsageError(`--user ${o.user}: use letters, digits, ".", "_", "@" or "-" (at most 64)`);
    const role = o.role ?? 'viewer';
    if (!(ROLES as readonly string[]).includes(role)) throw new UsageError(`--role ${role}: use one of ${ROLES.join(', ')}`);
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const record: TokenRecord = {
      id: `tok-${randomBytes(4).toString('hex')}`,
      tenant: o.tenant,
      user: o.user,
      role: role as Role,
      sha256: sha256(token),
      createdAt: new Date().toISOString(),
    };
    this.save([...this.list(), record]);
    return { token, record };
  }

  revoke(id: string): TokenRecord {
    const tokens = this.list();
    const t = tokens.find((r) => r.id === id);
    if (!t) throw new UsageError(`no token ${id}: see \`kiln token list\``);
    t.revokedAt ??= new Date().toISOString();
    this.save(tokens);
    return t;
  }

  /** The identity a presented token stands for; read from disk each time, so a revocation applies at once. */
  verify(presented: string): Identity | undefined {
    if (!presented.startsWith(TOKEN_PREFIX)) return undefined;
    const h = Buffer.from(sha256(presented), 'hex');
    const hit = this.list().find((r) => !r.revokedAt && timingSafeEqual(Buffer.from(r.sha256, 'hex'), h));
    return hit && { tokenId: hit.id, tenant: hit.tenant, user: hit.user, role: hit.role };
  }
}

export function can(id: Identity, p: Permission): boolean {
  return (PERMISSIONS[id.role] as readonly string[]).includes(p);
}
