import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Typed search attributes: the Web UI can filter runs by phase and repo. */
export const KilnPhase = defineSearchAttributeKey('KilnPhase', SearchAttributeType.KEYWORD);
export const KilnRepo = defineSearchAttributeKey('KilnRepo', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [
  { name: KilnPhase.name, type: 'Keyword' },
  { name: KilnRepo.name, type: 'Keyword' },
] as const;
