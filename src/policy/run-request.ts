/**
 * Workflow input is a request, not authority: anyone who can reach the Temporal frontend can
 * start a `kilnRun` with any input, so the worker checks each request against its own operator
 * configuration before it touches a disk. Unknown fields are refused, not ignored: a field that
 * the worker does not know is a field it cannot bound.
 */
import type { RunInput } from '../shared/types.js';
import { KilnInputError } from '../shared/errors.js';
import { runInputProblem, runInputSchema } from '../shared/run-input-schema.js';

/** What the worker's operator allows clients to ask for. Set on the worker, never in the input. */
export interface OperatorConfig {
  /** `kiln worker --allow-sandbox-off` / KILN_ALLOW_SANDBOX_OFF=1 */
  allowSandboxOff: boolean;
}

export function operatorConfigFromEnv(env: NodeJS.ProcessEnv): OperatorConfig {
  return { allowSandboxOff: env.KILN_ALLOW_SANDBOX_OFF === '1' };
}

/** A request this worker's operator does not allow: asking again changes nothing (non-retryable). */
export class RunRequestRefused extends KilnInputError {
  override readonly name = 'RunRequestRefused';
}

/** The request as the worker will honour it, or RunRequestRefused naming what to change. */
export function checkRunRequest(raw: unknown, operator: OperatorConfig): RunInput {
  const problem = runInputProblem(raw);
  if (problem) throw new RunRequestRefused(`run input refused by the worker: ${problem}`);
  const r = runInputSchema.parse(raw);
  if (r.sandbox === 'off' && !operator.allowSandboxOff) {
    throw new RunRequestRefused(
      'run input refused by the worker: sandbox "off" is not allowed on this worker; its operator must start it with `kiln worker --allow-sandbox-off` (or KILN_ALLOW_SANDBOX_OFF=1)',
    );
  }
  return r as RunInput;
}
