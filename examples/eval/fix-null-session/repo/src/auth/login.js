'use strict';
const { currentUser } = require('./session');

/** GET /login/me: who is signed in. `res` is a tiny response helper: res.status(n).json(body). */
function loginHandler(req, res) {
  try {
    const user = currentUser(req);
    if (!user) return res.status(401).json({ error: 'not signed in' });
    return res.status(200).json({ user: user.name });
  } catch (err) {
    return res.status(500).json({ error: 'internal error' });
  }
}

module.exports = { loginHandler };
