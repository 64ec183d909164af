'use strict';

const STATUS = { ORDER_NOT_FOUND: 404 };

/** Maps { method, path, body } to the service; answers { status, body }. */
function createOrderController(service) {
  const routes = [
    ['POST', /^\/orders$/, (_m, req) => ({ status: 201, body: service.create(req.body.items) })],
    ['GET', /^\/orders\/([^/]+)$/, (m) => ({ status: 200, body: service.get(m[1]) })],
    ['POST', /^\/orders\/([^/]+)\/pay$/, (m) => ({ status: 200, body: service.pay(m[1]) })],
  ];
  return function handle(req) {
    for (const [method, re, fn] of routes) {
      const m = req.method === method && re.exec(req.path);
      if (!m) continue;
      try {
        return fn(m, req);
      } catch (err) {
        if (err.code && STATUS[err.code]) return { status: STATUS[err.code], body: { error: err.code } };
        throw err;
      }
    }
    return { status: 404, body: { error: 'NO_ROUTE' } };
  };
}

module.exports = { createOrderController };
