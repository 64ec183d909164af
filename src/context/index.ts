export { readProjectRules, findRuleFiles, RULE_FILE_NAMES, type RuleFile, type RulesOptions } from './rules.js';
export { extractKeywords, extractWeightedKeywords, keywordWeight, splitIdentifier, type Keyword } from './keywords.js';
export { rankFiles, countMatches, isTestFile, isNoiseFile, fileStem, type RankedFile, type RankOptions } from './rank.js';
export { relevantSnippets, type SnippetOptions } from './snippets.js';
export { currentDiff } from './diff.js';
export { packByPriority, type ContextItem, type ContextKind, type PackedItem, type PackedContext } from './pack.js';
export { buildContext, buildNaiveContext, PRIORITY, type BuildContextInput, type BuiltContext } from './build.js';
export { compactConversation, conversationTokens, KEEP_RECENT_MESSAGES, type CompactionMemory } from './compact.js';
