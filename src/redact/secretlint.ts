import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';
import { applySpans, findSecrets, mergeSpans, type SecretSpan } from './redact.js';

// secretlint rule id → the kind Kiln prints; unknown rules fall back to their short name.
const KIND_BY_RULE: Record<string, string> = {
  '@secretlint/secretlint-rule-aws': 'aws-access-key',
  '@secretlint/secretlint-rule-gcp': 'gcp-key',
  '@secretlint/secretlint-rule-privatekey': 'private-key',
  '@secretlint/secretlint-rule-npm': 'npm-token',
  '@secretlint/secretlint-rule-basicauth': 'url-password',
  '@secretlint/secretlint-rule-slack': 'slack-token',
  '@secretlint/secretlint-rule-sendgrid': 'sendgrid-key',
  '@secretlint/secretlint-rule-shopify': 'shopify-token',
  '@secretlint/secretlint-rule-github': 'github-token',
  '@secretlint/secretlint-rule-openai': 'openai-key',
  '@secretlint/secretlint-rule-anthropic': 'anthropic-key',
  '@secretlint/secretlint-rule-linear': 'linear-key',
  '@secretlint/secretlint-rule-1password': '1password-token',
  '@secretlint/secretlint-rule-database-connection-string': 'url-password',
};

function kindOf(ruleId: string): string {
  return KIND_BY_RULE[ruleId] ?? ruleId.replace(/^@secretlint\/secretlint-rule-/, '');
}

/**
 * Secrets the recommended secretlint preset reports in `text`, as spans over it.
 * secretlint reports [start, end) offsets into the source it was given.
 */
export async function secretlintSpans(text: string): Promise<SecretSpan[]> {
  const result = await lintSource({
    source: { content: text, filePath: '/kiln-redact.txt', contentType: 'text' },
    options: {
      noPhysicFilePath: true,
      config: { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }] },
    },
  });
  return result.messages.filter((m) => m.range[1] > m.range[0]).map((m) => ({ start: m.range[0], end: m.range[1], kind: kindOf(m.ruleId) }));
}

/**
 * The thorough variant for text that is written once and kept (artifacts, the
 * final patch summary): Kiln's own patterns first, then whatever secretlint's
 * recommended preset finds that they did not (Kiln's spans win an overlap: they
 * mask only the value where secretlint masks a whole URL).
 */
export async function redactAsync(text: string): Promise<string> {
  const own = findSecrets(text);
  const extra = (await secretlintSpans(text)).filter((s) => !own.some((o) => s.start < o.end && o.start < s.end));
  return applySpans(text, mergeSpans([...own, ...extra]));
}
