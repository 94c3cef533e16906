/**
 * Membership of the replicas that share the work (sharded controllers):
 * one Lease per replica (`<group>-<identity>`, labelled with the group),
 * renewed like the leader Lease; the live replicas are those whose Lease
 * this replica saw change within the lease duration, measured on its own
 * monotonic clock (kube/leader.ts's rule: clocks need not agree). Keys are
 * assigned over the live replicas by `owner` (rendezvous hashing,
 * shard-ring.ts, unless given; the controller's buckets are assigned with
 * bounded loads, shard-buckets.ts). Any assignment works that every replica
 * computes alike from the same members: the barrier below guards whatever
 * keys it moves.
 *
 * Hand-over without two owners: each replica publishes, in its Lease, the
 * id of the view (the set of live replicas) it acts on, and it adopts a new
 * view only after it has stopped working on every key the new view takes
 * from it (`onView` resolves once drained; the Lease is renewed meanwhile).
 * A key that moves to this replica may be worked on only when every live
 * replica publishes the view this replica acts on: the old owner, if alive,
 * has then drained it. Once allowed, a key stays allowed through later
 * views that leave it here; owning it in the view before is not enough,
 * since that view's barrier may never have been met. An
 * old owner that is no longer live needs no acknowledgement: it stopped
 * working when its own renewals failed past the renew deadline (`onLost`),
 * before its Lease could expire for the others. Leases of replicas dead
 * for two lease durations, or released, are deleted.
 *
 * `dkv controller --shards auto` (reconciler/process/main.ts) assigns buckets of
 * clusters (shard-buckets.ts) with it.
 */
import type { Clock, TimerHandle } from './clock.js';
import { KubeApiError } from './client.js';
import type { LeaseApi } from './leader.js';
import type { Logger } from './log.js';
import { ownerOf, shardView, type ShardView } from './shard-ring.js';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces';
export const SHARD_GROUP_LABEL = 'dkv.example.com/shard-group';
export const SHARD_VIEW_ANNOTATION = 'dkv.example.com/shard-view';

interface ShardLease {
  apiVersion: string; kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
}

export interface ShardMembershipOptions {
  /** Reads, creates and updates Leases, and lists them by label. */
  readonly client: LeaseApi;
  readonly namespace: string;
  /** Names the replicas that share one kind of work: the Leases' label value and name prefix. */
  readonly group: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  /** A replica whose renewals fail this long stops working (onLost); must be < leaseDurationMs. */
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** Who owns a key among the live members; the same on every replica. Default: rendezvous hashing (shard-ring.ts). */
  readonly owner?: (key: string, members: readonly string[]) => string | undefined;
  /** The view to act on changed: stop working on the keys it takes from this replica, then resolve. */
  readonly onView: (view: ShardView) => Promise<void>;
  /** This replica can no longer show it is alive: stop working on every key now. */
  readonly onLost: () => void;
}

export class ShardMembership {
  private acting: ShardView;
  /**
   * Keys this replica has been allowed to work on since it last gave them
   * up: owned in every view adopted since the hand-over barrier let it
   * start. Owning a key in the view before is not enough: that view's
   * barrier may never have been met (the old owner still working on it).
   */
  private readonly entitled = new Set<string>();
  private readonly seen = new Map<string, { key: string; at: number; view?: string; identity: string }>();
  private timer?: TimerHandle;
  private deadline?: TimerHandle;
  private stopped = false;
  private alive = false;
  private ownLease?: ShardLease;
  private renewing: Promise<void> = Promise.resolve();

  constructor(private readonly options: ShardMembershipOptions) {
    if (!(options.leaseDurationMs > options.renewDeadlineMs && options.renewDeadlineMs > options.retryPeriodMs)) {
      throw new Error(`shard membership: needs leaseDurationMs > renewDeadlineMs > retryPeriodMs (got ${options.leaseDurationMs}, ${options.renewDeadlineMs}, ${options.retryPeriodMs})`);
    }
    // Alone until the first look at the others: nothing is worked on before then (see mayWork).
    this.acting = shardView([]);
  }

  private ownerOf(key: string, members: readonly string[]): string | undefined {
    return (this.options.owner ?? ownerOf)(key, members);
  }

  private get leaseName(): string {
    return `${this.options.group}-${this.options.identity}`;
  }

  /** The view this replica acts on. */
  get view(): ShardView {
    return this.acting;
  }

  /** Whether this replica's own Lease is renewed within the deadline. */
  get isAlive(): boolean {
    return this.alive;
  }

  start(): void {
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.options.clock.after(delayMs, () => {
      void this.tick().finally(() => this.schedule(this.options.retryPeriodMs));
    });
  }

  /** One round: renew (publishing the acting view), look at the others, adopt a changed view. Never rejects. */
  async tick(): Promise<void> {
    const { clock, log } = this.options;
    const startedAt = clock.monotonic();
    try {
      await this.renew();
      this.renewed(startedAt);
    } catch (e) {
      log.warn('shard.renew-failed', { error: (e as Error).message });
    }
    try {
      const live = await this.lookAtOthers();
      const next = shardView(this.alive ? [...live, this.options.identity] : live);
      if (next.id !== this.acting.id && this.alive) {
        // Draining and relisting may take longer than the renew deadline: the Lease is renewed meanwhile.
        const adopted = this.options.onView(next);
        await this.renewUntil(adopted);
        if (!this.alive) return; // lost while draining: onLost has stopped everything, nothing is adopted
        for (const key of this.entitled) if (this.ownerOf(key, next.members) !== this.options.identity) this.entitled.delete(key);
        this.acting = next;
        log.info('shard.view', { members: next.members, view: next.id });
        await this.renew().catch(() => undefined); // publish at once: others wait on it
      }
    } catch (e) {
      log.warn('shard.list-failed', { error: (e as Error).message });
    }
  }

  /** Renews every retry period until `done` settles (rejects as it does). */
  private async renewUntil(done: Promise<void>): Promise<void> {
    let settled = false;
    let timer: TimerHandle | undefined;
    const loop = () => {
      timer = this.options.clock.after(this.options.retryPeriodMs, () => {
        if (settled || this.stopped) return;
        const startedAt = this.options.clock.monotonic();
        void this.renew().then(() => this.renewed(startedAt), (e: Error) => this.options.log.warn('shard.renew-failed', { error: e.message })).finally(() => {
          if (!settled) loop();
        });
      });
    };
    loop();
    try {
      await done;
    } finally {
      settled = true;
      timer?.cancel();
    }
  }

  /** One renewal at a time: a renewal while draining and the tick's own never race each other's resourceVersion. */
  private renew(): Promise<void> {
    const run = this.renewing.then(() => this.renewOnce());
    this.renewing = run.catch(() => undefined);
    return run;
  }

  private async renewOnce(): Promise<void> {
    const { client, namespace, group, identity, leaseDurationMs } = this.options;
    const path = `${LEASES}/${namespace}/leases/${this.leaseName}`;
    const spec = { holderIdentity: identity, leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000), renewTime: new Date(this.options.clock.now()).toISOString().replace('Z', '000Z') };
    const metadata = {
      name: this.leaseName, namespace, labels: { [SHARD_GROUP_LABEL]: group }, annotations: { [SHARD_VIEW_ANNOTATION]: this.acting.id },
    };
    let current = this.ownLease;
    if (!current) {
      try {
        current = await client.request<ShardLease>('GET', path);
      } catch (e) {
        if (!(e instanceof KubeApiError && e.status === 404)) throw e;
        this.ownLease = await client.request<ShardLease>('POST', `${LEASES}/${namespace}/leases`, { body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata, spec } });
        return;
      }
    }
    try {
      this.ownLease = await client.request<ShardLease>('PUT', path, {
        body: { ...current, metadata: { ...current.metadata, ...metadata, resourceVersion: current.metadata.resourceVersion }, spec },
      });
    } catch (e) {
      this.ownLease = undefined; // re-read next time (409: written elsewhere)
      throw e;
    }
  }

  private renewed(startedAt: number): void {
    const remaining = startedAt + this.options.renewDeadlineMs - this.options.clock.monotonic();
    if (remaining <= 0) return this.lose('renew succeeded too late');
    this.deadline?.cancel();
    this.deadline = this.options.clock.after(remaining, () => this.lose(`no successful renew within ${this.options.renewDeadlineMs} ms`));
    this.alive = true;
  }

  private lose(reason: string): void {
    this.deadline?.cancel();
    if (!this.alive) return;
    this.alive = false;
    this.options.log.warn('shard.lost', { reason });
    // Nothing is worked on until a renew succeeds and a view is adopted again.
    this.acting = shardView([]);
    this.entitled.clear();
    this.options.onLost();
  }

  /** The other live replicas, each Lease judged on this replica's own clock. */
  private async lookAtOthers(): Promise<string[]> {
    const { client, namespace, group, identity, leaseDurationMs, clock } = this.options;
    const list = await client.request<{ items: ShardLease[] }>('GET', `${LEASES}/${namespace}/leases`, { query: { labelSelector: `${SHARD_GROUP_LABEL}=${group}` } });
    const now = clock.monotonic();
    const live: string[] = [];
    const present = new Set<string>();
    for (const lease of list.items) {
      const holder = lease.spec?.holderIdentity;
      if (holder === identity) continue;
      if (!holder) {
        this.collect(lease); // released by a replica that stopped
        continue;
      }
      present.add(lease.metadata.name);
      const key = `${lease.spec?.renewTime}|${lease.metadata.resourceVersion}`;
      const before = this.seen.get(lease.metadata.name);
      const at = before?.key === key ? before.at : now;
      this.seen.set(lease.metadata.name, { key, at, view: lease.metadata.annotations?.[SHARD_VIEW_ANNOTATION], identity: holder });
      const durationMs = (lease.spec?.leaseDurationSeconds ?? leaseDurationMs / 1000) * 1000;
      if (now - at <= durationMs) live.push(holder);
      // Every restart of a replica with a new identity (a pod's name) leaves a Lease: one unchanged for two durations is a dead replica's.
      else if (now - at > 2 * durationMs) this.collect(lease);
    }
    for (const name of [...this.seen.keys()]) if (!present.has(name)) this.seen.delete(name);
    return live;
  }

  /**
   * Deletes a dead or released replica's Lease, unless it changed since it
   * was read (the resourceVersion precondition): a replica that came back
   * keeps its Lease. Best effort: another replica may delete it first.
   */
  private collect(lease: ShardLease): void {
    const { client, namespace, log } = this.options;
    void client.request('DELETE', `${LEASES}/${namespace}/leases/${lease.metadata.name}`, {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: lease.metadata.resourceVersion } },
    }).then(() => log.info('shard.lease-collected', { lease: lease.metadata.name, holder: lease.spec?.holderIdentity ?? '' }), (e: unknown) => {
      if (!(e instanceof KubeApiError && (e.status === 404 || e.status === 409))) log.warn('shard.lease-collect-failed', { lease: lease.metadata.name, error: (e as Error).message });
    });
  }

  /** Whether every other live replica publishes the view this one acts on (they have drained what it took from them). */
  private barrierMet(): boolean {
    for (const other of this.acting.members) {
      if (other === this.options.identity) continue;
      const entry = [...this.seen.values()].find((s) => s.identity === other);
      if (entry?.view !== this.acting.id) return false;
    }
    return true;
  }

  /**
   * Whether this replica may work on `key` now: it owns it in the view it
   * acts on, and either has been allowed to since before (owned in every
   * view adopted since), or every live replica publishes this view (each
   * has drained what this view takes from it).
   */
  mayWork(key: string): boolean {
    const { identity } = this.options;
    if (!this.alive || this.ownerOf(key, this.acting.members) !== identity) return false;
    if (this.entitled.has(key)) return true;
    if (!this.barrierMet()) return false;
    this.entitled.add(key);
    return true;
  }

  /** Stops renewing and frees this replica's Lease, so the others take its keys at once instead of waiting it out. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.deadline?.cancel();
    this.alive = false;
    await this.renewing; // a renewal in flight would make the release's resourceVersion stale
    const path = `${LEASES}/${this.options.namespace}/leases/${this.leaseName}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const lease = attempt === 0 ? this.ownLease : await this.options.client.request<ShardLease>('GET', path);
        if (!lease) return;
        await this.options.client.request('PUT', path, { body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 } } });
        return;
      } catch (e) {
        if (e instanceof KubeApiError && e.status === 404) return;
        if (attempt === 1 || !(e instanceof KubeApiError && e.status === 409)) this.options.log.warn('shard.release-failed', { error: (e as Error).message });
      }
    }
  }
}
