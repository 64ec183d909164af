/** What every scored run of `kiln eval` carries (report.md and --json read these). */
export const SCORE_FIELDS = [
  'task',
  'kind',
  'repeat',
  'success',
  'attempts',
  'turns',
  'tokens',
  'costUsd',
  'durationMs',
  'diffLines',
  'testsModified',
  'overBudget',
  'failureClass',
  'scripted',
] as const;
