/**
 * What the controller remembers about a cluster's objects between
 * reconciles, none of it needed for correctness after a restart (reconcile
 * reads the live objects; this only avoids repeating itself):
 * - fields the API server does not keep as applied, per desired hash, so they
 *   are reported once and not "corrected" forever;
 * - the hash last applied to each object, so an object whose hash another
 *   writer replaced is told apart from a spec change;
 * - which names a create found taken, so they are read, not created again;
 * - the fight records of each object's fields (see field-fights.ts).
 * Entries go with their object, and everything with the cluster, so the
 * memory never outgrows the fleet.
 */
import { DEFAULT_FIELD_FIGHT_POLICY, FieldFights, type FieldFightPolicy } from '../core/field-fights.js';

export interface ObjectMemory {
  /** Fields not kept as applied, for one desired hash. */
  notKept?: { readonly hash: string; readonly paths: ReadonlySet<string> };
  /** The desired hash this controller last applied. */
  appliedHash?: string;
  /**
   * A create of this object found its name taken by an object the caches do
   * not hold (someone else's, or one applied without our labels): it is read
   * before each write until a read finds it gone.
   */
  nameTaken?: boolean;
  readonly fights: FieldFights;
}

export class ClusterMemory {
  private readonly clusters = new Map<string, Map<string, ObjectMemory>>();
  /** The last message reported in an Event, by cluster and reason. */
  private readonly reports = new Map<string, Map<string, string>>();
  /** The revision a NOSPACE recovery last compacted each cluster at (lost on a restart: it compacts again, which etcd answers as done). */
  private readonly compactions = new Map<string, { revision: number; at: number }>();

  constructor(private readonly fightPolicy: FieldFightPolicy = DEFAULT_FIELD_FIGHT_POLICY) {}

  /** The memory of one object (`Kind/name`) of one cluster (`namespace/name`), created on first use. */
  object(cluster: string, object: string): ObjectMemory {
    let objects = this.clusters.get(cluster);
    if (!objects) this.clusters.set(cluster, (objects = new Map()));
    let memory = objects.get(object);
    if (!memory) objects.set(object, (memory = { fights: new FieldFights(this.fightPolicy) }));
    return memory;
  }

  /** Keeps only the objects the cluster still generates. */
  retain(cluster: string, objects: ReadonlySet<string>, now: number): void {
    const known = this.clusters.get(cluster);
    if (!known) return;
    for (const [name, memory] of known) {
      if (!objects.has(name)) known.delete(name);
      else memory.fights.prune(now);
    }
  }

  /**
   * Whether `message` is news for this cluster and reason, remembering it if
   * so. A problem that persists is reported once, even when the next
   * reconcile starts before the cache shows the status that reported it.
   */
  isNews(cluster: string, reason: string, message: string): boolean {
    let reported = this.reports.get(cluster);
    if (!reported) this.reports.set(cluster, (reported = new Map()));
    if (reported.get(reason) === message) return false;
    reported.set(reason, message);
    return true;
  }

  /** Every problem but these is over: a recurrence is news again. */
  resolvedExcept(cluster: string, current: readonly string[]): void {
    const reported = this.reports.get(cluster);
    for (const reason of reported?.keys() ?? []) if (!current.includes(reason)) reported!.delete(reason);
  }

  compaction(cluster: string): { revision: number; at: number } | undefined {
    return this.compactions.get(cluster);
  }

  compacted(cluster: string, revision: number, at: number): void {
    this.compactions.set(cluster, { revision, at });
  }

  /** The cluster is gone. */
  forget(cluster: string): void {
    this.clusters.delete(cluster);
    this.reports.delete(cluster);
    this.compactions.delete(cluster);
  }

  /** Objects remembered, over every cluster (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const objects of this.clusters.values()) n += objects.size;
    return n;
  }
}
