export { redact, findSecrets, type SecretSpan } from './redact.js';
export { redactAsync, secretlintSpans } from './secretlint.js';
export { createStreamRedactor, type StreamRedactor } from './stream.js';
export { isPlaceholder } from './patterns.js';
