/**
 * The shape of a run request, checked twice: by the workflow before it does anything (so a
 * malformed request started straight through Temporal ends blocked with the field to fix, and
 * nothing is scheduled for it), and by the worker before it touches a disk, where the operator's
 * bounds are added (policy/run-request.ts). Pure zod: deterministic, so workflow code may use it.
 * Unknown fields are refused, not ignored: a field nobody knows is a field nobody bounds.
 */
import { z } from 'zod';
import type { RunInput } from './types.js';

const positiveInt = z.number().int().positive();
const command = z.string().min(1).max(10_000);

export const runInputSchema = z
  .object({
    runId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/),
    repo: z.string().min(1),
    goal: z.string().min(1).max(100_000),
    base: z.string().min(1).max(400).optional(),
    checks: z.array(command).max(50),
    setup: z.array(command).max(50),
    model: z.string().min(1).max(4096),
    maxTokens: positiveInt,
    temperature: z.number().min(0).max(2).optional(),
    sandbox: z.enum(['bwrap', 'off']),
    approvalMode: z.enum(['strict', 'default', 'auto']),
    allowTestEdits: z.boolean(),
    approvalTimeoutMs: positiveInt,
    humanTimeoutMs: positiveInt,
    budgets: z.object({ maxTurns: positiveInt, maxTokens: positiveInt, maxUsd: z.number().nonnegative(), maxWallMs: positiveInt }).strict(),
    maxAttempts: positiveInt.max(10),
    heartbeatTimeoutMs: positiveInt,
    commandTimeoutMs: positiveInt,
    contextTokens: positiveInt.optional(),
    turnsPerRun: positiveInt.optional(),
    hostLossTimeoutMs: positiveInt.optional(),
    searchAttributes: z.boolean().optional(),
    /** no checks may still end succeeded: the user asked, and it is printed and audited */
    allowUnverified: z.boolean().optional(),
    review: z.enum(['off', 'on', 'required']).optional(),
    reviewModel: z.string().min(1).max(4096).optional(),
    attempts: positiveInt.max(8).optional(),
    attemptModels: z.array(z.string().min(1).max(4096)).max(8).optional(),
    /** a client may protect more paths, never fewer */
    protect: z.array(z.string().min(1).max(1000)).max(200).optional(),
    /** who started the run, as a server vouches: checked by the worker before the audit names them */
    requestedBy: z
      .object({ user: z.string().min(1).max(200), tenant: z.string().max(200), issuedAt: z.string().max(100), sig: z.string().regex(/^[0-9a-f]{64}$/) })
      .strict()
      .optional(),
  })
  .strict();

/** The first problem with a request, as `field: what is wrong`; undefined when it is well formed. */
export function runInputProblem(raw: unknown): string | undefined {
  const r = runInputSchema.safeParse(raw);
  if (r.success) return undefined;
  const i = r.error.issues[0]!;
  const where = i.path.map(String).join('.');
  const what = i.code === 'unrecognized_keys' ? `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.join(', ')}` : i.message;
  return (where ? `${where}: ${what}` : what).slice(0, 500);
}

// A RunInput field the schema lacks would be refused at run time as "unknown": make it a compile error instead.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesRunInput: Same<z.infer<typeof runInputSchema>, RunInput> & Same<keyof z.infer<typeof runInputSchema>, keyof RunInput> = true;
void schemaMatchesRunInput;
