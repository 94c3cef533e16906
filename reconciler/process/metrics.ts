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
  readonly watchBytes = new Counter({ name: 'dkv_watch_received_bytes_total', help: 'Bytes received on watch streams, by kind (sharded replicas receive their share).', labelNames: ['kind'], registers: [this.registry] });
  readonly watchRestarts = new Counter({ name: 'dkv_watch_restarts_total', help: 'Watches restarted after an error or an expired resourceVersion.', labelNames: ['kind', 'reason'], registers: [this.registry] });
  // Timestamps, not ages: an age exported at reconcile time would be stale between reconciles; alert on time() - this.
  readonly backupLastSuccess = new Gauge({ name: 'dkv_backup_last_success_timestamp_seconds', help: 'When the newest successful backup Job of a cluster completed (unix seconds).', labelNames: ['namespace', 'name'], registers: [this.registry] });
  readonly definitionsExports = new Counter({ name: 'dkv_definitions_exports_total', help: 'Scheduled exports of the clusters\' definitions into S3, by result.', labelNames: ['result'], registers: [this.registry] });
  // The backup conditions as gauges (1: True), for alerts (constructs/install/alert-rules.ts): judged against each cluster's schedule, which a rule could not read.
  readonly backupFailing = new Gauge({ name: 'dkv_backup_failing', help: 'A cluster\'s BackupFailing condition: 1 while its newest finished backup Job failed.', labelNames: ['namespace', 'name'], registers: [this.registry] });
  readonly backupStale = new Gauge({ name: 'dkv_backup_stale', help: 'A cluster\'s BackupStale condition: 1 while no backup succeeded since two scheduled runs came and went.', labelNames: ['namespace', 'name'], registers: [this.registry] });
  readonly fieldFights = new Counter({
    name: 'dkv_field_fights_total', help: 'Drift brake engaged: a field corrected again and again was left alone for a hold, by kind, field path and the manager that kept changing it.',
    labelNames: ['kind', 'field', 'manager'], registers: [this.registry],
  });
  readonly backupLastDuration = new Gauge({ name: 'dkv_backup_last_duration_seconds', help: 'Start to completion of the newest successful backup Job of a cluster.', labelNames: ['namespace', 'name'], registers: [this.registry] });
  readonly conversions = new Histogram({ name: 'dkv_conversion_review_duration_seconds', help: 'ConversionReviews answered by the conversion webhook, by result (success, failure).', labelNames: ['result'], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5], registers: [this.registry] });
  readonly fleetActive = new Gauge({ name: 'dkv_fleet_active', help: 'Fleet mode: 1 while this controller\'s cluster holds the fleet lock and writes what is global, 0 while it stands by.', registers: [this.registry] });
  readonly shardBuckets = new Gauge({ name: 'dkv_shard_buckets', help: 'Sharded mode: the buckets of clusters this replica reconciles now.', registers: [this.registry] });
  /** What the controller's caches hold, by kind: set by the controller (Controller's constructor). */
  cacheSizes: () => ReadonlyMap<string, number> = () => new Map();
  readonly cachedObjects = new Gauge({
    name: 'dkv_cache_objects', help: 'Objects in the controller\'s caches, by kind (sharded: this replica\'s share).', labelNames: ['kind'], registers: [this.registry],
    collect: () => {
      for (const [kind, size] of this.cacheSizes()) this.cachedObjects.set({ kind }, size);
    },
  });
  /** Sharded mode: whether the API server filters the DistributedKV list and watch (Controller's constructor sets it). */
  shardFilteredByServer: () => boolean | undefined = () => undefined;
  readonly shardServerFiltered = new Gauge({
    name: 'dkv_shard_server_filtered', help: 'Sharded mode: 1 while the API server filters this replica\'s DistributedKV list and watch by shardSelector, 0 while the replica filters them itself.', registers: [this.registry],
    collect: () => {
      const byServer = this.shardFilteredByServer();
      if (byServer !== undefined) this.shardServerFiltered.set(byServer ? 1 : 0);
    },
  });
  readonly leader = new Gauge({ name: 'dkv_leader', help: '1 while this process holds the leader Lease and reconciles.', registers: [this.registry] });

  /** The `manager` label values seen so far; see recordDrift. */
  private readonly managers = new Set<string>();

  constructor(private readonly maxManagers = MAX_MANAGER_LABELS) {
    collectDefaultMetrics({ register: this.registry, prefix: 'dkv_' });
  }

  /** One ConversionReview the webhook answered. */
  observeConversion(seconds: number, ok: boolean): void {
    this.conversions.observe({ result: ok ? 'success' : 'failure' }, seconds);
  }

  /**
   * Counts one drifted field. A field manager's name is whatever the writer
   * chose (any client with write access can invent one per request), so
   * only the first `maxManagers` names become label values and the rest
   * count as `other`: the metric's cardinality stays bounded.
   */
  recordDrift(kind: string, field: string, manager: string | undefined, action: 'reported' | 'corrected'): void {
    this.drift.inc({ kind, field, manager: this.managerLabel(manager), action });
  }

  /** Counts one engaged drift brake (reconciler/core/field-fights.ts), its manager label bounded as recordDrift's. */
  recordFight(kind: string, field: string, manager: string | undefined): void {
    this.fieldFights.inc({ kind, field, manager: this.managerLabel(manager) });
  }

  private managerLabel(manager: string | undefined): string {
    const label = manager ?? 'unknown';
    if (this.managers.has(label)) return label;
    if (this.managers.size >= this.maxManagers) return 'other';
    this.managers.add(label);
    return label;
  }
}

/** Distinct field-manager label values dkv_drift_total keeps before counting the rest as `other`. */
export const MAX_MANAGER_LABELS = 20;
