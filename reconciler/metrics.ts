import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Why an object was written (or, in detect-only mode, would have been). */
export type ApplyReason = 'created' | 'spec-changed' | 'drift' | 'pruned';

/**
 * The controller's Prometheus metrics, named after controller-runtime's so
 * existing dashboards translate: reconciles by result, reconcile duration,
 * writes by reason, drift by field and manager, queue depth, watch restarts,
 * leadership.
 */
export class ControllerMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({ name: 'dkv_reconcile_total', help: 'Reconciles by result (success, error, terminal).', labelNames: ['result'], registers: [this.registry] });
  readonly reconcileDuration = new Histogram({ name: 'dkv_reconcile_duration_seconds', help: 'Time spent in one reconcile.', buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers: [this.registry] });
  readonly applies = new Counter({ name: 'dkv_applies_total', help: 'Objects written, by kind and reason (created, spec-changed, drift, pruned).', labelNames: ['kind', 'reason'], registers: [this.registry] });
  readonly drift = new Counter({ name: 'dkv_drift_total', help: 'Drifted fields found, by kind, field path, the manager that changed it and whether it was corrected.', labelNames: ['kind', 'field', 'manager', 'action'], registers: [this.registry] });
  readonly queueDepth = new Gauge({ name: 'dkv_workqueue_depth', help: 'Keys waiting in the work queue.', registers: [this.registry] });
  readonly watchRestarts = new Counter({ name: 'dkv_watch_restarts_total', help: 'Watches restarted after an error or an expired resourceVersion.', labelNames: ['kind', 'reason'], registers: [this.registry] });
  readonly leader = new Gauge({ name: 'dkv_leader', help: '1 while this process holds the leader Lease and reconciles.', registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'dkv_' });
  }
}
