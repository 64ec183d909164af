'use strict';

const store = require('./store');

/**
 * The session a user is logged in with, or null.
 * Called on every authenticated request by the login middleware.
 */
function getSession(userId) {
  const sessions = store.findByUser(userId);
  const session = sessions[0];
  if (!session) return null;
  return { id: session.id, userId: session.userId, createdAt: session.createdAt };
}

module.exports = { getSession };
