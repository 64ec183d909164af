'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { invoiceLine } = require('./invoice');

test('invoice line shows unit and total price', () => {
  assert.strictEqual(invoiceLine({ name: 'Book', cents: 700, qty: 2 }, 'eur'), '2 x Book @ 7.00 EUR = 14.00 EUR');
});
