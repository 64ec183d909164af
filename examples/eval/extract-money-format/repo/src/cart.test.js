'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { cartTotal } = require('./cart');

test('cart total sums the lines', () => {
  assert.strictEqual(cartTotal([{ cents: 1000 }, { cents: 250 }], 'eur'), 'Total: 12.50 EUR');
});
