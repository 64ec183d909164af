'use strict';

class OrderError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** Orders: { id, status: 'pending' | 'paid' | 'shipped' | 'cancelled', items }. */
function createOrderService(store = new Map()) {
  let seq = 0;
  return {
    create(items) {
      const order = { id: String(++seq), status: 'pending', items };
      store.set(order.id, order);
      return order;
    },
    get(id) {
      const order = store.get(id);
      if (!order) throw new OrderError('ORDER_NOT_FOUND', `no order ${id}`);
      return order;
    },
    pay(id) {
      const order = this.get(id);
      order.status = 'paid';
      return order;
    },
  };
}

module.exports = { createOrderService, OrderError };
