import { expect, test } from 'vitest';
import { colourOn, paintSummary } from '../../../src/cli/colour.js';

test('colour only on a terminal, never with NO_COLOR, always with FORCE_COLOR', () => {
  expect(colourOn({ isTTY: true }, {})).toBe(true);
  expect(colourOn({ isTTY: false }, {})).toBe(false);
  expect(colourOn({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
  expect(colourOn({ isTTY: false }, { FORCE_COLOR: '1' })).toBe(true);
});

test('the outcome line takes the colour of its verdict; the rest stays plain', () => {
  expect(paintSummary('✔ r: succeeded\n  attempts 1', true)).toBe('\u001b[32m✔ r: succeeded\u001b[0m\n  attempts 1');
  expect(paintSummary('✘ r: blocked', true)).toBe('\u001b[31m✘ r: blocked\u001b[0m');
  expect(paintSummary('✘ r: blocked', false)).toBe('✘ r: blocked');
});
