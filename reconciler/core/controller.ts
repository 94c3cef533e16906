/**
 * The loop machinery around reconcileDistributedKV: informers feed a work
 * queue, workers take keys and reconcile them, failures come back with
 * backoff. Nothing here knows what a DistributedKV turns into.
 */
import { setMaxListeners } from 'node:events';
import type { GeneratorConfig } from '../../api/config.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import { servedVersionOf } from '../../api/versions.js';
import { realClock, type Clock } from '../../kube/clock.js';
import { slimCluster, slimOwnedObject } from '../memory/cache-slimming.js';
import { StringInterner } from '../../kube/string-interner.js';
import { ClusterMemory } from '../memory/cluster-memory.js';
import { WriteEchoes } from '../memory/write-echoes.js';
import { EventRecorder } from '../process/events.js';
import type { FieldFightPolicy } from './field-fights.js';
import { Informer, objectKey, type CachedObject, type InformerOptions, type InformerSelection } from '../../kube/informer.js';
import { bucketLabelSelector, bucketOf, shardSelectorOf } from '../../kube/shard-buckets.js';
import { KubeApiError, resourcePath, type KubeClient } from '../../kube/client.js';
import type { Logger } from '../../kube/log.js';
import { ControllerMetrics } from '../process/metrics.js';
import { claimedNames } from './name-claims.js';
import { s3PathClaims, s3PathRivals } from './s3-path-claims.js';
import type { MemberAddresses } from '../day2/member-addresses.js';
import { controllingOwner } from './ownership.js';
import { WorkQueue, type BackoffPolicy } from '../../kube/queue.js';
import { reconcileDistributedKV, TerminalError, type ReconcileContext } from './reconcile.js';
import { s3RestoreSourceCheck, type RestoreSourceCheck } from '../day2/restore-source-check.js';
import { scheduleDefinitionsExports } from '../fleet/definitions-export.js';
import type { S3Credentials } from '../../backup/object-store.js';
import { parseS3Path, type S3Location } from '../../backup/s3-location.js';
import type { LiveDistributedKV } from '../../api/exported-definition.js';
import type { FleetRole } from '../fleet/fleet-role.js';
import { endCondition, type JobLike } from '../day2/backup-status.js';
import { equalitySelector } from '../../kube/label-selector.js';
import { servedKindProbe } from './served-kind.js';

/** What a DistributedKV generates; their informers are label-selected so the cache holds only ours. */
export const OWNED_KINDS = [
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
  { apiVersion: 'batch/v1', kind: 'CronJob' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
] as const;

import { ISSUED_KINDS } from './issued-kinds.js';

export { ISSUED_KINDS };

/**
 * What a DistributedKV's objects create and the controller only reads: the
 * backup Jobs its CronJob runs (they carry the CronJob's labels, so the same
 * selector finds them and the instance label names their cluster).
 */
export const OBSERVED_KINDS = [
  { apiVersion: 'batch/v1', kind: 'Job' },
] as const;

export interface ControllerOptions {
  readonly client: KubeClient;
  readonly config: GeneratorConfig;
  readonly log: Logger;
  readonly metrics?: ControllerMetrics;
  /** Parallel reconciles (of different keys). @default 4 */
  readonly workers?: number;
  /** Full resync of every cached object. @default 10 minutes */
  readonly resyncMs?: number;
  /** Only this namespace; all namespaces when unset. */
  readonly namespace?: string;
  /** Retry backoff of failed reconciles. @default 2 s doubling to 5 min */
  readonly backoff?: BackoffPolicy;
  /** When a field another writer keeps changing stops being corrected. @default 3 corrections in 10 min, then 5 min doubling to 1 h */
  readonly fieldFights?: FieldFightPolicy;
  /** Time and timers of the queue, the informers and reconciles. @default the real clock */
  readonly clock?: Clock;
  /** How often a cluster blocked by an object that is not its own looks again. @default 60 s */
  readonly objectConflictRecheckMs?: number;
  /** Watch tuning of every informer (see InformerOptions). @default idle timeout a little above the watch timeout, backoff 1 s to 30 s */
  readonly watch?: Pick<InformerOptions, 'watchIdleTimeoutMs' | 'initialBackoffMs' | 'maxBackoffMs'>;
  /** Where members are (engines with a membership). @default their per-pod DNS names */
  readonly memberAddresses?: MemberAddresses;
  /** @default 3000 */
  readonly memberTimeoutMs?: number;
  /** Whether a restore's source can be restored. @default its manifest read from S3 as the configuration says */
  readonly restoreSourceCheck?: RestoreSourceCheck;
  /** S3 credentials for restore checks and the scheduled definitions export. @default the AWS SDK's default chain */
  readonly s3Credentials?: S3Credentials;
  /** Sharded mode: only the clusters of the buckets given to setShare() are cached and reconciled. */
  readonly sharding?: ShardingOptions;
}

/** How a sharded controller learns when it may work on a bucket (kube/shard-membership.ts decides). */
export interface ShardingOptions {
  /** Whether the hand-over of `bucket` to this replica is complete (its previous owner has let go). */
  readonly mayWork: (bucket: number) => boolean;
  /** How soon a cluster whose bucket is still being handed over is looked at again. */
  readonly retryMs: number;
}

/**
 * The labels every generated object carries whatever its cluster: the
 * configured labels whose values do not depend on the cluster's name or
 * component. They select the owned-object informers.
 */
export function generatedSelector(config: GeneratorConfig): string {
  return equalitySelector(Object.fromEntries(Object.entries(config.labels).filter(([, v]) => !v.includes('{'))));
}

/** The label whose value is the cluster's name: maps objects applied without owner references (GitOps) to their cluster. */
function instanceLabel(config: GeneratorConfig): string | undefined {
  return Object.entries(config.labels).find(([, v]) => v === '{name}')?.[0];
}

/** The uid of an object's controlling owner: the owned caches' index. */
function ownerUids(object: CachedObject): string[] {
  const uid = controllingOwner(object)?.uid;
  return uid ? [uid] : [];
}

export class Controller {
  readonly metrics: ControllerMetrics;
  /** The DistributedKV cache. */
  readonly clusters: Informer;
  /** The owned (and observed) objects' caches, by `apiVersion/kind`. */
  readonly owned = new Map<string, Informer>();
  private readonly queue: WorkQueue;
  private readonly memory: ClusterMemory;
  /** Our own writes until their watch events come back (those queue nothing). */
  private readonly writeEchoes = new WriteEchoes();
  private readonly context: Omit<ReconcileContext, 'client' | 'events'>;
  private workersRunning: Promise<void>[] = [];
  private leading = false;
  private synced = false;
  /** Ends the current leadership term: its requests are refused or cut off. */
  private term?: AbortController;
  /** Start and stop run one after the other: a new term never begins before the last one ended. */
  private transition: Promise<void> = Promise.resolve();
  /** Fleet mode: this controller's part (setFleetRole); undefined outside fleet mode. */
  private fleet?: FleetRole;
  /** Ends the current fleet term (active): global writes of the term stop. */
  private fleetTerm?: AbortController;
  /** Sharded mode: the buckets whose clusters are cached and may be worked on. */
  private share = new Set<number>();
  /** The reconciles running now, by key, with their cluster's bucket (sharded mode waits for those it gives up). */
  private readonly running = new Map<string, { bucket?: number; finished: Promise<void> }>();

  constructor(private readonly options: ControllerOptions) {
    const { client, config, log } = options;
    this.metrics = options.metrics ?? new ControllerMetrics();
    const clock = options.clock ?? realClock;
    this.queue = new WorkQueue(options.backoff ?? { baseMs: 2000, maxMs: 300_000 }, (depth) => this.metrics.queueDepth.set(depth), clock);
    const resyncMs = options.resyncMs ?? 10 * 60_000;
    // Sharded: nothing is cached before the first share.
    const selection = options.sharding ? this.selections(new Set()) : undefined;
    // One table for every cache: a cluster's uid is shared by its owned objects' owner references.
    const strings = new StringInterner();
    this.clusters = new Informer({
      client, apiVersion: API_VERSION, kind: KIND, path: resourcePath(API_VERSION, KIND, options.namespace), resyncMs, log, clock, ...options.watch,
      shard: selection?.clusters.shard,
      // Clusters by the object names and the backup folder they claim: a clash is found without a request.
      indexBy: (object) => [...claimedNames(object, config), ...s3PathClaims(object)],
      transform: (object) => strings.internTree(slimCluster(object)),
      onEvent: (type, object, old) => {
        // Status-only updates (our own writes) change neither generation nor metadata we act on.
        if (type === 'updated' && old && old !== object && old.metadata.generation === object.metadata.generation
          && JSON.stringify(old.metadata.annotations) === JSON.stringify(object.metadata.annotations)
          && JSON.stringify(old.metadata.finalizers) === JSON.stringify(object.metadata.finalizers)
          && old.metadata.deletionTimestamp === object.metadata.deletionTimestamp) return;
        const queue = () => {
          this.queue.add(objectKey(object));
          // A cluster refused for a name clash may go ahead once its rival is gone or renamed its objects.
          for (const claim of new Set([...claimedNames(object, config), ...(old ? claimedNames(old, config) : [])])) {
            for (const rival of this.clusters.byIndex(claim)) if (rival.metadata.uid !== object.metadata.uid) this.queue.add(objectKey(rival));
          }
          // Likewise a cluster refused for its backup folder.
          for (const rival of [...s3PathRivals(this.clusters, object), ...(old ? s3PathRivals(this.clusters, old) : [])]) this.queue.add(objectKey(rival));
        };
        // The echo of our own write (the final-backup finalizer) carries nothing its reconcile did not see.
        this.writeEchoes.observe(type, KIND, object, queue);
      },
      onWatchRestart: (reason) => this.metrics.watchRestarts.inc({ kind: KIND, reason }),
      onWatchBytes: (bytes) => this.metrics.watchBytes.inc({ kind: KIND }, bytes),
    });
    const selector = generatedSelector(config);
    const instance = instanceLabel(config);
    const fieldManager = config.controller.fieldManager;
    for (const { apiVersion, kind } of [...OWNED_KINDS, ...ISSUED_KINDS, ...OBSERVED_KINDS]) {
      this.owned.set(`${apiVersion}/${kind}`, new Informer({
        client, apiVersion, kind, path: resourcePath(apiVersion, kind, options.namespace), resyncMs, log, clock, ...options.watch,
        ...(selection?.owned ?? { labelSelector: selector }),
        indexBy: ownerUids,
        transform: (object) => strings.internTree(slimOwnedObject(object, fieldManager)),
        onEvent: (type, object) => this.writeEchoes.observe(type, kind, object, () => this.enqueueOwner(object, instance)),
        onWatchRestart: (reason) => this.metrics.watchRestarts.inc({ kind, reason }),
        onWatchBytes: (bytes) => this.metrics.watchBytes.inc({ kind }, bytes),
      }));
    }
    this.metrics.shardFilteredByServer = () => this.clusters.shardFilteredByServer;
    this.metrics.cacheSizes = () => new Map([this.clusters, ...this.owned.values()].map((i): [string, number] => [i.kind, i.size]));
    this.memory = new ClusterMemory(options.fieldFights);
    this.context = {
      config, clusters: this.clusters, owned: this.owned, metrics: this.metrics, memory: this.memory,
      now: () => clock.now(),
      objectConflictRecheckMs: options.objectConflictRecheckMs ?? 60_000,
      memberAddresses: options.memberAddresses,
      memberTimeoutMs: options.memberTimeoutMs,
      restoreSourceCheck: options.restoreSourceCheck ?? s3RestoreSourceCheck(config.backup.s3, options.s3Credentials),
      fleet: () => this.fleet,
      writeEchoes: this.writeEchoes,
      podMonitorsServed: servedKindProbe(client, 'monitoring.coreos.com/v1', 'podmonitors', () => clock.now()),
      certificatesServed: servedKindProbe(client, 'cert-manager.io/v1', 'certificates', () => clock.now()),
      log,
    };
  }

  /**
   * What the informers select for a share of buckets: DistributedKVs by the
   * hash ranges of their uids (server-side shardSelector, else filtered
   * here), their objects by the bucket label, so no object is relabelled
   * when buckets move.
   */
  private selections(buckets: ReadonlySet<number>): { clusters: InformerSelection; owned: InformerSelection } {
    const { config } = this.options;
    const total = config.sharding.buckets;
    const owned = [...buckets];
    const selector = shardSelectorOf(owned, total);
    const bucketTerm = bucketLabelSelector(config.sharding.bucketLabel, owned);
    const clusterShard = { selector, matches: (o: CachedObject) => o.metadata.uid !== undefined && buckets.has(bucketOf(o.metadata.uid, total)) };
    return {
      clusters: { shard: clusterShard },
      owned: bucketTerm
        ? { labelSelector: [generatedSelector(config), bucketTerm].filter(Boolean).join(',') }
        : { labelSelector: generatedSelector(config), shard: { selector: undefined, matches: () => false } },
    };
  }

  /**
   * Sharded mode: from now on this replica caches and reconciles the
   * clusters of `buckets`. Buckets it gives up are let go first: no new
   * reconcile of theirs starts, and those running finish. Then every
   * informer relists its new selection; clusters of buckets it gains are
   * queued (each one is worked on once ShardingOptions.mayWork allows).
   * Resolves when buckets given up are no longer worked on and the caches
   * hold the new share.
   */
  async setShare(buckets: readonly number[]): Promise<void> {
    const next = new Set(buckets);
    const kept = new Set([...this.share].filter((b) => next.has(b)));
    const given = [...this.share].filter((b) => !next.has(b));
    this.share = kept;
    await Promise.all([...this.running.values()].filter((r) => r.bucket !== undefined && !kept.has(r.bucket)).map((r) => r.finished));
    const selection = this.selections(next);
    await Promise.all([this.clusters.select(selection.clusters), ...[...this.owned.values()].map((i) => i.select(selection.owned))]);
    this.share = next;
    this.metrics.shardBuckets.set(next.size);
    const filteredByServer = this.clusters.shardFilteredByServer;
    this.options.log.info('shard: share changed', { buckets: next.size, gained: buckets.filter((b) => !kept.has(b)).length, given: given.length, clusters: this.clusters.size, filteredByServer });
    for (const cr of this.clusters.list()) this.queue.add(objectKey(cr));
  }

  /** Sharded mode: whether `key` may be reconciled now, or later (being handed over), or not here. */
  private shardAdmits(key: string): { admit: boolean; bucket?: number; retry?: boolean } {
    const sharding = this.options.sharding;
    const uid = this.clusters.get(key)?.metadata.uid;
    // Not cached (deleted, or never ours): its reconcile only forgets what this process remembers of it.
    if (!sharding || !uid) return { admit: true };
    const bucket = bucketOf(uid, this.options.config.sharding.buckets);
    if (!this.share.has(bucket)) return { admit: false, bucket };
    if (!sharding.mayWork(bucket)) return { admit: false, bucket, retry: true };
    return { admit: true, bucket };
  }

  private enqueueOwner(object: CachedObject, instance: string | undefined): void {
    // Any served version: objects created before an upgrade name the version of their day (v1alpha1).
    const owner = (object.metadata.ownerReferences ?? [])
      .find((r: { kind?: string; apiVersion?: string; controller?: boolean }) => r.kind === KIND && servedVersionOf(r.apiVersion) !== undefined && r.controller);
    const name = owner?.name ?? (instance ? object.metadata.labels?.[instance] : undefined);
    if (name) this.queue.add(`${object.metadata.namespace}/${name}`);
  }

  private informers(): Informer[] {
    return [this.clusters, ...this.owned.values()];
  }

  /** Starts the informers and resolves when every cache has synced. */
  async startCaches(): Promise<void> {
    const informers = this.informers();
    for (const informer of informers) informer.start();
    await Promise.all(informers.map((i) => i.hasSynced()));
    this.synced = true;
  }

  /**
   * Whether every informer still hears from the API server (see
   * Informer.liveness); the message names the kinds whose watches went
   * silent. /healthz serves it, so a replica frozen on a dead connection is
   * restarted instead of leading with a cache that no longer changes.
   */
  watchLiveness(): { readonly live: boolean; readonly message: string } {
    const silent = this.informers().map((informer) => ({ informer, ...informer.liveness() })).filter((i) => !i.live);
    if (silent.length === 0) return { live: true, message: 'ok' };
    return { live: false, message: silent.map((i) => `${i.informer.kind} watch silent for ${Math.round(i.silentMs / 1000)} s (bound ${Math.round(i.boundMs / 1000)} s)`).join('; ') };
  }

  get cachesSynced(): boolean {
    return this.synced;
  }

  /** Nothing queued, nothing being reconciled: every change seen so far has been acted on. */
  get idle(): boolean {
    return this.queue.depth === 0 && this.queue.inFlight === 0;
  }

  /** Reconciles of `namespace/name` that failed since its last success (each one waits out a longer backoff). */
  failuresOf(key: string): number {
    return this.queue.failureCount(key);
  }

  /**
   * Begins a leadership term (on winning the Lease): every known cluster is
   * queued, workers start with a client fenced by this term. If the previous
   * term is still winding down, this one starts only after it has ended, so
   * old and new workers never run side by side. Resolves once started.
   */
  startWorkers(): Promise<void> {
    return (this.transition = this.transition.then(() => {
      if (this.leading) return;
      this.leading = true;
      if (!this.options.sharding) this.metrics.leader.set(1); // sharded: every replica works; dkv_leader is not about that
      const term = (this.term = new AbortController());
      setMaxListeners(0, term.signal); // one listener per request in flight: many, by design
      const client = this.options.client.fenced(term.signal);
      const { log, config } = this.options;
      const clock = this.options.clock ?? realClock;
      const context: ReconcileContext = {
        ...this.context, client, term: term.signal,
        events: new EventRecorder(client, config.controller.fieldManager, log, clock),
      };
      this.queue.reopen();
      for (const cr of this.clusters.list()) this.queue.add(objectKey(cr));
      const workers = this.options.workers ?? 4;
      for (let i = 0; i < workers; i++) this.workersRunning.push(this.work(context));
      // Sharded: every replica works, and the Lease holder among them exports (startGlobalTasks).
      if (this.options.sharding) return;
      if (!this.fleet) this.exportDefinitionsDuring(term.signal);
      else if (this.fleet.role === 'active' && this.fleetTerm) this.exportDefinitionsDuring(AbortSignal.any([term.signal, this.fleetTerm.signal]));
    }));
  }

  /**
   * Fleet mode (reconciler/fleet/fleet-lock.ts): whether this controller writes
   * what is global. Becoming active starts the definitions' export (while
   * leading); becoming standby ends it at once and fences this cluster's
   * backups before anything else: every backup CronJob suspended and every
   * backup Job still running deleted, so the other cluster's controller,
   * which may take the fleet lock once it expires, is the only writer.
   * Then every cluster is reconciled again (CronJobs, Standby condition).
   * Resolves once fenced.
   */
  async setFleetRole(role: FleetRole): Promise<void> {
    const was = this.fleet;
    this.fleet = role;
    this.metrics.fleetActive.set(role.role === 'active' ? 1 : 0);
    if (role.role === 'active' && was?.role !== 'active') {
      const fleetTerm = (this.fleetTerm = new AbortController());
      if (this.leading && this.term) this.exportDefinitionsDuring(AbortSignal.any([this.term.signal, fleetTerm.signal]));
    } else if (role.role === 'standby' && was?.role !== 'standby') {
      this.fleetTerm?.abort();
      try {
        await this.fenceBackups();
      } finally {
        for (const cr of this.clusters.list()) this.queue.add(objectKey(cr));
      }
      return;
    }
    for (const cr of this.clusters.list()) this.queue.add(objectKey(cr));
  }

  /**
   * Suspends every backup CronJob and deletes every unfinished backup Job in
   * this cluster. Not fenced by the leadership term: it may run as that term
   * ends (the fleet lock is given up after it), and both writes are ones any
   * replica of this cluster would make in standby. Throws if any failed.
   */
  private async fenceBackups(): Promise<void> {
    const client = this.options.client;
    const fieldManager = this.options.config.controller.fieldManager;
    const cronJobs = this.owned.get('batch/v1/CronJob')!.list().filter((c) => !(c as { spec?: { suspend?: boolean } }).spec?.suspend);
    const running = (job: JobLike) => !job.status?.completionTime && !endCondition(job);
    const jobs = this.owned.get('batch/v1/Job')!.list().filter((j) => running(j as unknown as JobLike));
    const results = await Promise.allSettled([
      ...cronJobs.map((c) => client.request('PATCH', resourcePath('batch/v1', 'CronJob', c.metadata.namespace, c.metadata.name), {
        contentType: 'application/merge-patch+json', query: { fieldManager }, body: { spec: { suspend: true } },
      })),
      ...jobs.map((j) => client.request('DELETE', resourcePath('batch/v1', 'Job', j.metadata.namespace, j.metadata.name), { query: { propagationPolicy: 'Background' } })),
    ]);
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected' && !(r.reason instanceof KubeApiError && r.reason.status === 404));
    if (failed.length > 0) throw new Error(`fencing backups: ${failed.length} write(s) failed: ${failed.map((f) => (f.reason as Error).message).join('; ')}`);
    if (cronJobs.length + jobs.length > 0) this.options.log.warn('fleet standby: backups fenced', { cronJobsSuspended: cronJobs.length, jobsDeleted: jobs.length });
  }

  /**
   * Sharded mode: what one replica does for all (the Lease holder's, while
   * `term` lasts): the scheduled export of every cluster's definition, read
   * from the API server since this replica's cache holds only its share.
   */
  startGlobalTasks(term: AbortSignal): void {
    this.exportDefinitionsDuring(term);
  }

  /** Every cluster from the API server (paged), for what a sharded replica's cache cannot answer. */
  private async listAllClusters(): Promise<LiveDistributedKV[]> {
    const items: LiveDistributedKV[] = [];
    let continueToken: string | undefined;
    do {
      const page = await this.options.client.request<{ items: CachedObject[]; metadata: { continue?: string } }>('GET', resourcePath(API_VERSION, KIND, this.options.namespace), { query: { limit: 500, continue: continueToken } });
      for (const item of page.items) items.push({ ...item, apiVersion: API_VERSION, kind: KIND } as unknown as LiveDistributedKV);
      continueToken = page.metadata.continue || undefined;
    } while (continueToken);
    return items;
  }

  /** The scheduled export of the clusters' definitions (configuration backup.definitions), for one leadership term. */
  private exportDefinitionsDuring(term: AbortSignal): void {
    const { s3Path } = this.options.config.backup.definitions;
    if (!s3Path) return;
    this.startDefinitionsExports(parseS3Path(s3Path), term)
      .catch((e) => this.options.log.error('the definitions export could not start', { error: (e as Error).message }));
  }

  private async startDefinitionsExports(location: S3Location, term: AbortSignal): Promise<void> {
    const { schedule, retain } = this.options.config.backup.definitions;
    // Loaded here, not at the top: the S3 client adds about 25 MB to every controller process, and most never export.
    const { ObjectStore } = await import('../../backup/object-store.js');
    if (term.aborted) return;
    const store = ObjectStore.fromConfig(location.bucket, this.options.config.backup.s3, this.options.s3Credentials);
    term.addEventListener('abort', () => store.close(), { once: true });
    scheduleDefinitionsExports({
      clusters: () => (this.options.sharding ? this.listAllClusters() : this.clusters.list() as unknown as LiveDistributedKV[]),
      store, prefix: location.prefix ? `${location.prefix}/` : '', retain,
      server: this.options.client.server, clock: this.options.clock ?? realClock, log: this.options.log.child({ task: 'definitions-export' }),
    }, schedule, term, (result) => this.metrics.definitionsExports.inc({ result: result instanceof Error ? 'failed' : 'succeeded' }));
  }

  /**
   * Ends the term. On losing the Lease (`fence`, the default) nothing more is
   * written: no new key is taken, requests of the term not yet sent are
   * refused and those in flight are cut off. On shutting down while still
   * holding it (`drain`), in-flight reconciles finish first. Resolves when
   * the workers have stopped.
   */
  stopWorkers(mode: 'fence' | 'drain' = 'fence'): Promise<void> {
    // At once, not only after the queued transition: the Lease may already be lost. And again
    // in the transition, in case a start queued before this stop ran in between.
    this.stopTakingWork(mode);
    return (this.transition = this.transition.then(async () => {
      this.stopTakingWork(mode);
      await Promise.all(this.workersRunning);
      this.term?.abort();
      this.workersRunning = [];
    }));
  }

  private stopTakingWork(mode: 'fence' | 'drain'): void {
    this.leading = false;
    this.metrics.leader.set(0);
    this.queue.shutDown();
    if (mode === 'fence') this.term?.abort();
  }

  async stop(): Promise<void> {
    await this.stopWorkers();
    await Promise.all(this.informers().map((i) => i.stop()));
  }

  private async work(context: ReconcileContext): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      if (!this.leading) {
        this.queue.done(key);
        return;
      }
      const admitted = this.shardAdmits(key);
      if (!admitted.admit) {
        this.queue.forget(key);
        this.queue.done(key);
        if (admitted.retry) this.queue.addAfter(key, this.options.sharding!.retryMs);
        continue;
      }
      // Not cached: the cluster is gone (or not this replica's), and its reconcile makes no request, it only forgets.
      this.options.log.debug('reconciling', { key, cached: this.clusters.get(key) !== undefined });
      let finish: () => void = () => undefined;
      this.running.set(key, { bucket: admitted.bucket, finished: new Promise((resolve) => (finish = resolve)) });
      const started = process.hrtime.bigint();
      let outcome: string;
      try {
        const result = await reconcileDistributedKV(key, context);
        this.queue.forget(key);
        if (result.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
        outcome = 'success';
      } catch (e) {
        if (!this.leading) {
          // Cut off by the end of the term (a new term begins only after this worker ends): the next leader reconciles it.
          outcome = 'fenced';
        } else if (e instanceof TerminalError) {
          // Not retried: the next change to the object brings it back.
          this.queue.forget(key);
          outcome = 'terminal';
          this.options.log.warn('reconcile failed terminally', { key, outcome, error: e.message });
        } else {
          const retryInMs = Math.round(this.queue.addRateLimited(key));
          outcome = 'error';
          this.options.log.error('reconcile failed', { key, outcome, error: (e as Error).message, retryInMs, failures: this.queue.failureCount(key) });
        }
      } finally {
        this.running.delete(key);
        finish();
        this.queue.done(key);
      }
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.metrics.reconciles.inc({ result: outcome });
      this.metrics.reconcileDuration.observe(seconds);
      this.options.log.debug('reconciled', { key, outcome, durationMs: Math.round(seconds * 1000) });
    }
  }
}
