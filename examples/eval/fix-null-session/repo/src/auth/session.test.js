'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { currentUser } = require('./session');
const { loginHandler } = require('./login');

function fakeRes() {
  const res = { code: 0, body: undefined };
  res.status = (n) => { res.code = n; return res; };
  res.json = (b) => { res.body = b; return res; };
  return res;
}

test('currentUser returns the signed-in user', () => {
  assert.deepStrictEqual(currentUser({ session: { user: { name: 'ada' } } }), { name: 'ada' });
});

test('currentUser returns null when the session is null', () => {
  assert.strictEqual(currentUser({ session: null }), null);
  assert.strictEqual(currentUser({}), null);
});

test('login answers 401, not 500, when the session is null', () => {
  const res = fakeRes();
  loginHandler({ session: null }, res);
  assert.strictEqual(res.code, 401);
});

test('login answers 200 with the user name', () => {
  const res = fakeRes();
  loginHandler({ session: { user: { name: 'ada' } } }, res);
  assert.deepStrictEqual([res.code, res.body], [200, { user: 'ada' }]);
});
