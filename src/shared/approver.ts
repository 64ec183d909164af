/**
 * How a person who answered an approval was identified. The embedded dev server authenticates
 * nobody, so a name that arrives with a decision is a claim; the audit says which kind of claim,
 * so nobody mistakes a typed name for a login.
 *
 * The kiln CLI appends the OS account it runs as, `alice [os-user alice@host sig=…]`, signed with
 * the local approval key (src/auth/attestation.ts): the account is what the host's login vouched
 * for, to whoever trusts that CLI. The worker's audit checks the signature; a tag without one, or
 * one that does not verify, is self-declared like any typed name. A name typed with `--by` that
 * differs from the account stays self-declared (the account is kept beside it). The Web UI and
 * `temporal workflow signal` send only a name: self-declared. `authenticated` is a decision
 * `kiln serve` signed for its caller and the worker checked (src/activities/approvals.ts); nothing
 * on the embedded server alone produces it.
 */
export interface ApproverIdentity {
  kind: 'self-declared' | 'os-user' | 'authenticated';
  /** the name shown: what was typed, or the OS account */
  name: string;
  /** the OS account the kiln CLI ran as, when the decision came through it */
  osUser?: string;
  host?: string;
  /** authenticated: the tenant `kiln serve` vouched the user belongs to */
  tenant?: string;
  /** a signature came with the decision and did not verify: why it was not counted as authenticated */
  unverified?: string;
  /** the CLI's signature over an os-user tag, until the audit has checked it (never recorded) */
  osUserSig?: string;
}

/**
 * What an os-user tag is signed for, the same in the CLI and the audit: one approval of one exact
 * call (the hash the run recorded for it), one pre-approved command with its scope, one human
 * decision with its text, a cancel.
 */
export function approverSubject(e: { kind: string; id?: string; action?: string; hash?: string; command?: string; scope?: string; text?: string }): string {
  if (e.kind === 'approval') return JSON.stringify(['approval', e.id ?? '', e.hash ?? '']);
  if (e.kind === 'pre-approval') return JSON.stringify(['pre-approval', e.scope ?? 'once', e.command ?? '']);
  if (e.kind === 'human') return JSON.stringify(['human', e.action ?? '', e.text ?? '']);
  return e.kind;
}

/** "1 of 2 approvals (alice)" for an approval that needs more than anyone's one word; "" otherwise. */
export function approvalProgress(a: { approvals?: { needed: number; authenticated: boolean; by: string[] } }): string {
  if (!a.approvals) return '';
  const { needed, by, authenticated } = a.approvals;
  return `${by.length} of ${needed} approval${needed > 1 ? 's' : ''}${by.length ? ` (${by.join(', ')})` : ''}${authenticated ? ', authenticated (kiln serve)' : ''}`;
}

const OS_TAG = /^(?<name>.*?)\s*\[os-user (?<user>[^@\]\s]+)@(?<host>[^\]\s]+)(?: sig=(?<sig>[0-9a-f]{32}))?\]$/;

/** The `by` the kiln CLI sends: the typed name (or the OS user) tagged with the OS account, signed by `sign` when the CLI has the key. */
export function cliApprover(typed: string | undefined, os: { user: string; host: string }, sign?: (name: string) => string): string {
  const name = typed?.trim() || os.user;
  return `${name} [os-user ${os.user}@${os.host}${sign ? ` sig=${sign(name)}` : ''}]`;
}

/**
 * What a `by` claims. Pure (the workflow calls it): an os-user claim carries its signature for
 * the audit to check (verifiedOsUser in src/activities/approvals.ts); unsigned, it is self-declared.
 */
export function identifyApprover(by: string | undefined): ApproverIdentity {
  const m = OS_TAG.exec(by ?? '');
  if (!m?.groups) return { kind: 'self-declared', name: by?.trim() || 'unknown' };
  const { name, user, host, sig } = m.groups as { name: string; user: string; host: string; sig?: string };
  if (name !== user || !sig) return { kind: 'self-declared', name: name || user, osUser: user, host };
  return { kind: 'os-user', name, osUser: user, host, osUserSig: sig };
}
