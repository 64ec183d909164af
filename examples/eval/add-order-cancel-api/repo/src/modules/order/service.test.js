'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { createOrderService } = require('./service');
const { createOrderController } = require('./controller');

test('a pending order can be cancelled', () => {
  const s = createOrderService();
  const o = s.create(['book']);
  assert.strictEqual(s.cancel(o.id).status, 'cancelled');
  assert.strictEqual(s.get(o.id).status, 'cancelled');
});

test('a paid order cannot be cancelled', () => {
  const s = createOrderService();
  const o = s.create(['book']);
  s.pay(o.id);
  assert.throws(() => s.cancel(o.id), { code: 'ORDER_NOT_CANCELLABLE' });
  assert.strictEqual(s.get(o.id).status, 'paid');
});

test('cancelling an unknown order fails with ORDER_NOT_FOUND', () => {
  assert.throws(() => createOrderService().cancel('404'), { code: 'ORDER_NOT_FOUND' });
});

test('POST /orders/:id/cancel answers 200, 409 and 404', () => {
  const s = createOrderService();
  const handle = createOrderController(s);
  const a = s.create(['a']);
  const b = s.create(['b']);
  s.pay(b.id);
  assert.deepStrictEqual(handle({ method: 'POST', path: `/orders/${a.id}/cancel` }).status, 200);
  assert.deepStrictEqual(handle({ method: 'POST', path: `/orders/${b.id}/cancel` }), { status: 409, body: { error: 'ORDER_NOT_CANCELLABLE' } });
  assert.strictEqual(handle({ method: 'POST', path: '/orders/99/cancel' }).status, 404);
});

test('creating and paying still work', () => {
  const handle = createOrderController(createOrderService());
  const created = handle({ method: 'POST', path: '/orders', body: { items: ['x'] } });
  assert.strictEqual(created.status, 201);
  assert.strictEqual(handle({ method: 'POST', path: `/orders/${created.body.id}/pay` }).body.status, 'paid');
});
