/**
 * Workflow input is a request, not authority: anyone who can reach the Temporal frontend can
 * start a `kilnRun` with any input, so the worker checks each request against its own operator
 * configuration before it touches a disk. Unknown fields are refused, not ignored: a field that
 * the worker does not know is a field it cannot bound.
 */
import { z } from 'zod';
import type { RunInput } from '../shared/types.js';
import { KilnInputError } from '../shared/errors.js';

/** What the worker's operator allows clients to ask for. Set on the worker, never in the input. */
export interface OperatorConfig {
  /** `kiln worker --allow-sandbox-off` / KILN_ALLOW_SANDBOX_OFF=1 */
  allowSandboxOff: boolean;
}

export function operatorConfigFromEnv(env: NodeJS.ProcessEnv): OperatorConfig {
  return { allowSandboxOff: env.KILN_ALLOW_SANDBOX_OFF === '1' };
}

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
    /** a client may protect more paths, never fewer */
    protect: z.array(z.string().min(1).max(1000)).max(200).optional(),
  })
  .strict();

/** A request this worker's operator does not allow: asking again changes nothing (non-retryable). */
export class RunRequestRefused extends KilnInputError {
  override readonly name = 'RunRequestRefused';
}

/** The request as the worker will honour it, or RunRequestRefused naming what to change. */
export function checkRunRequest(raw: unknown, operator: OperatorConfig): RunInput {
  const r = runInputSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const where = i.path.length ? i.path.map(String).join('.') : 'input';
    const what = i.code === 'unrecognized_keys' ? `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.join(', ')}` : i.message;
    throw new RunRequestRefused(`run input refused by the worker: ${where}: ${what}`);
  }
  if (r.data.sandbox === 'off' && !operator.allowSandboxOff) {
    throw new RunRequestRefused(
      'run input refused by the worker: sandbox "off" is not allowed on this worker; its operator must start it with `kiln worker --allow-sandbox-off` (or KILN_ALLOW_SANDBOX_OFF=1)',
    );
  }
  return r.data as RunInput;
}

// A RunInput field the schema lacks would be refused at run time as "unknown": make it a compile error instead.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesRunInput: Same<z.infer<typeof runInputSchema>, RunInput> & Same<keyof z.infer<typeof runInputSchema>, keyof RunInput> = true;
void schemaMatchesRunInput;
