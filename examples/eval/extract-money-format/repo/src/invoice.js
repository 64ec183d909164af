'use strict';

/** One invoice line: "2 x Book @ 7.00 EUR = 14.00 EUR". */
function invoiceLine(item, currency) {
  const unit = (item.cents / 100).toFixed(2) + ' ' + currency.toUpperCase();
  const total = ((item.cents * item.qty) / 100).toFixed(2) + ' ' + currency.toUpperCase();
  return `${item.qty} x ${item.name} @ ${unit} = ${total}`;
}

module.exports = { invoiceLine };
