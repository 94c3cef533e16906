/**
 * What the controller remembers between reconciles (cluster-memory.ts) goes
 * with its object and its cluster, so it never outgrows the fleet, and a
 * problem that persists is news only once.
 */
import { ClusterMemory } from '../../reconciler/memory/cluster-memory.js';

describe('the controller\'s memory of clusters', () => {
  it('drops an object\'s entries when the cluster no longer generates it, and everything when the cluster is gone', () => {
    const memory = new ClusterMemory();
    memory.object('shop/orders', 'CronJob/orders-backup').notKept = { hash: 'h', paths: new Set(['spec.jobTemplate']) };
    memory.object('shop/orders', 'StatefulSet/orders').appliedHash = 'h';
    memory.object('shop/carts', 'StatefulSet/carts').appliedHash = 'g';
    expect(memory.size).toBe(3);

    memory.retain('shop/orders', new Set(['StatefulSet/orders']), 0);
    expect(memory.size).toBe(2);
    expect(memory.object('shop/orders', 'StatefulSet/orders').appliedHash).toBe('h');

    memory.forget('shop/orders');
    memory.forget('shop/carts');
    expect(memory.size).toBe(0);
  });

  it('reports a persisting problem once, and again only after it was resolved', () => {
    const memory = new ClusterMemory();
    expect(memory.isNews('shop/orders', 'ObjectConflict', 'Service/orders ...')).toBe(true);
    expect(memory.isNews('shop/orders', 'ObjectConflict', 'Service/orders ...')).toBe(false);
    expect(memory.isNews('shop/orders', 'ObjectConflict', 'Service/orders and PodDisruptionBudget/orders ...')).toBe(true);
    memory.resolvedExcept('shop/orders', []);
    expect(memory.isNews('shop/orders', 'ObjectConflict', 'Service/orders and PodDisruptionBudget/orders ...')).toBe(true);
  });
});
