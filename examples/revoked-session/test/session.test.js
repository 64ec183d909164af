'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const store = require('../src/store');
const { getSession } = require('../src/session');

test.beforeEach(() => store.clear());

test('returns the session of a logged-in user', () => {
  store.insert({ id: 's1', userId: 'u1', createdAt: 1 });
  assert.equal(getSession('u1').id, 's1');
});

test('returns null for a user without sessions', () => {
  assert.equal(getSession('nobody'), null);
});

test('should reject revoked session', () => {
  store.insert({ id: 's1', userId: 'u1', createdAt: 1, revokedAt: 5 });
  assert.equal(getSession('u1'), null);
});

test('returns the newest active session', () => {
  store.insert({ id: 'old', userId: 'u1', createdAt: 1 });
  store.insert({ id: 'revoked', userId: 'u1', createdAt: 3, revokedAt: 4 });
  store.insert({ id: 'new', userId: 'u1', createdAt: 2 });
  assert.equal(getSession('u1').id, 'new');
});
