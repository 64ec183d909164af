'use strict';

// A tiny in-memory session store standing in for a database table.
const sessions = [];

function insert(session) {
  sessions.push({ revokedAt: null, ...session });
}

function findByUser(userId) {
  return sessions.filter((s) => s.userId === userId);
}

function clear() {
  sessions.length = 0;
}

module.exports = { insert, findByUser, clear };
