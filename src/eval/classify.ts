/**
 * Why a run failed, in one of five classes, from facts the run left behind. Pure and ordered:
 * the first rule that holds wins, so each rule only has to say what it looks for.
 *
 *   1. success (and no test touched)                              → null
 *   1b. the verifier refused work the task calls correct: the task
 *      expects success, a verdict failed, and the model was a
 *      script that did all it says (at most it ran past its end:
 *      the retry the refusal caused has no steps)                 → verifier
 *   2. the model could not answer: ScriptError, ModelFatalError,
 *      kiln_script_error (a scripted transcript that disagrees)    → model
 *   3. Kiln's own machinery: setup failed, checks could not run,
 *      an activity gave up, the run could not be followed          → infrastructure
 *   4. approvals timed out, or denials are ≥ 2 and ≥ a third of
 *      the tool calls (the agent kept hitting policy)              → policy
 *   5. tool errors (checks excluded: a failing `npm test` is the
 *      verifier's business) are ≥ 3 and ≥ half of the calls       → tool
 *   6. stuck, no progress, a budget used up                        → model
 *   7. the verifier's last verdict failed, or a success changed
 *      a test file                                                 → verifier
 *   8. anything else (it stopped with nothing to verify)           → model
 */
import type { FailureClass } from './types.js';

export interface FailureFacts {
  outcome: string;
  /** the run's final reason */
  reason: string;
  /** why it asked for a person, each time */
  needsHumanReasons: string[];
  /** the last verdict, if verification ran */
  verdictPass: boolean | null;
  testsModified: boolean;
  toolCalls: number;
  toolDenied: number;
  /** failed tool calls, check commands excluded */
  toolErrors: number;
  approvalTimeouts: number;
  /** the eval could not follow the run to its end */
  evalError?: string;
  /** the task says a correct run succeeds: its script (if any) is correct work by its author's word */
  expectsSuccess?: boolean;
  /** verdicts that failed, over the whole run (events.jsonl) */
  refusals?: number;
  /** the model was a script: what it did is what the task's author wrote */
  scripted?: boolean;
}

/** A class, and when the class alone would mislead, why it is that class. */
export interface FailureJudgement {
  failureClass: FailureClass | null;
  note?: string;
}

const MODEL_ERROR = /ScriptError|ModelFatalError|kiln_script_error|authentication_error|invalid_request_error/i;
const INFRA =
  /setup command failed|setup failed|SandboxUnavailable|checks could not run|KilnConfigError|(prepareWorkspace|runTool|verify|finalizeRun|recordAudit|recordToolResult|agentTurn) failed|retries exhausted|timed out waiting/i;
const STUCK = /stuck|no progress|budget exhausted|over budget/i;

/** The scripted server's answer to a turn after the script's last step (model/scripted-server.ts). */
const PAST_SCRIPT = /the script ends after \d+ steps?, but the run asked for turn \d+/;

export function classifyFailure(f: FailureFacts): FailureClass | null {
  return judgeFailure(f).failureClass;
}

export function judgeFailure(f: FailureFacts): FailureJudgement {
  if (f.outcome === 'succeeded' && !f.testsModified && !f.evalError) return { failureClass: null };
  const text = [f.reason, ...f.needsHumanReasons, f.evalError ?? ''].join('\n');
  // a turn past the script's end is no disagreement with it: the run asked for work the script
  // never had to do, and after a refused verdict that is the retry the refusal started
  const pastScript = PAST_SCRIPT.test(text);
  const disagrees = MODEL_ERROR.test(text) && !pastScript;
  const refused = (f.refusals ?? 0) > 0 || f.verdictPass === false;
  // the activity that met the script's end failed with it: that is not the machinery failing
  const infra = INFRA.test(pastScript ? text.replace(/\w+ failed: ScriptError/g, '') : text);
  if (f.scripted && f.expectsSuccess && refused && !disagrees && !f.evalError && f.outcome !== 'error' && !infra) {
    const note = pastScript
      ? 'the verifier refused; the retry ran past the script'
      : 'the verifier refused work the task calls correct, and the run failed after it';
    return { failureClass: 'verifier', note };
  }
  return { failureClass: classifyRest(f, text) };
}

function classifyRest(f: FailureFacts, text: string): FailureClass {
  if (MODEL_ERROR.test(text)) return 'model';
  if (f.evalError || f.outcome === 'error' || INFRA.test(text)) return 'infrastructure';
  if (f.approvalTimeouts > 0 || /approval \S+ timed out/i.test(text)) return 'policy';
  if (f.toolDenied >= 2 && f.toolDenied * 3 >= f.toolCalls) return 'policy';
  if (f.toolErrors >= 3 && f.toolErrors * 2 >= f.toolCalls) return 'tool';
  if (STUCK.test(text)) return 'model';
  if (f.verdictPass === false || f.testsModified) return 'verifier';
  return 'model';
}
