export { redact, findSecrets, type SecretSpan } from './redact.js';
export { redactAsync, secretlintSpans } from './secretlint.js';
export { createStreamRedactor, type StreamRedactor } from './stream.js';
export { isPlaceholder } from './patterns.js';
export { registerKnownSecrets, secretEnvValues, valuesInSecretFile, encodingsOf, KNOWN_VALUE_MIN_CHARS } from './known.js';
export { redactDeep } from './deep.js';
