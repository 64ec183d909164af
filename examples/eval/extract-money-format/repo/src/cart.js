'use strict';

/** "Total: 12.50 EUR" for a cart of { cents } lines. */
function cartTotal(lines, currency) {
  const cents = lines.reduce((sum, l) => sum + l.cents, 0);
  const text = (cents / 100).toFixed(2) + ' ' + currency.toUpperCase();
  return 'Total: ' + text;
}

module.exports = { cartTotal };
