'use strict';

/** The signed-in user of a request, or null when nobody is signed in. */
function currentUser(req) {
  return req.session.user || null;
}

module.exports = { currentUser };
