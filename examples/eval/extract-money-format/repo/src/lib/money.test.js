'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { formatMoney } = require('./money');

test('formatMoney prints cents as units with the currency code', () => {
  assert.strictEqual(formatMoney(1250, 'eur'), '12.50 EUR');
  assert.strictEqual(formatMoney(5, 'usd'), '0.05 USD');
});

test('cart and invoice use formatMoney instead of their own formatting', () => {
  for (const file of ['cart.js', 'invoice.js']) {
    const src = fs.readFileSync(path.join(__dirname, '..', file), 'utf8');
    assert.match(src, /require\('\.\/lib\/money'\)/, `${file} should use lib/money`);
    assert.doesNotMatch(src, /toFixed\(2\)/, `${file} still formats money itself`);
  }
});
