import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Typed search attributes: the Web UI and `kiln list` filter runs by them. The workflow upserts
 * them (only when the server has them: RunInput.searchAttributes); `kiln worker` registers them.
 */
export const KilnPhase = defineSearchAttributeKey('KilnPhase', SearchAttributeType.KEYWORD);
export const KilnRepo = defineSearchAttributeKey('KilnRepo', SearchAttributeType.KEYWORD);
/** repo-relative paths the run has changed */
export const KilnTouched = defineSearchAttributeKey('KilnTouched', SearchAttributeType.KEYWORD_LIST);
/** who approved or rejected a tool call in this run */
export const KilnApprovers = defineSearchAttributeKey('KilnApprovers', SearchAttributeType.KEYWORD_LIST);
/** the largest share of any budget (turns, tokens, cost, wall time) used so far: 0.5 = half */
export const KilnBudgetShare = defineSearchAttributeKey('KilnBudgetShare', SearchAttributeType.DOUBLE);
/** when the oldest pending approval was asked; unset while nothing waits */
export const KilnWaitingSince = defineSearchAttributeKey('KilnWaitingSince', SearchAttributeType.DATETIME);

/** the tenant a run was started for by `kiln serve`: every API read and write is filtered by it */
export const KilnTenant = defineSearchAttributeKey('KilnTenant', SearchAttributeType.KEYWORD);

export const KILN_SEARCH_ATTRIBUTE_KEYS = [KilnPhase, KilnRepo, KilnTouched, KilnApprovers, KilnBudgetShare, KilnWaitingSince, KilnTenant] as const;

/** The names the `temporal` CLI takes (`--search-attribute NAME=TYPE`, `operator search-attribute create --type`). */
const CLI_TYPE = {
  KEYWORD: 'Keyword',
  KEYWORD_LIST: 'KeywordList',
  DOUBLE: 'Double',
  DATETIME: 'Datetime',
} as const;

export const SEARCH_ATTRIBUTES = KILN_SEARCH_ATTRIBUTE_KEYS.map((k) => ({ name: k.name, type: CLI_TYPE[k.type as keyof typeof CLI_TYPE] }));
