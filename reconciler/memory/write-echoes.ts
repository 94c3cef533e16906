/**
 * The controller's own writes, until the watch brings them back. A write
 * returns the object as stored, with its resourceVersion, and the reconcile
 * that made it reports from that response (report.ts). The watch then
 * delivers the same version: the write's echo. Queued like any event, the
 * echo reran the cluster's reconcile for nothing: at 2,000 new clusters
 * every cluster was reconciled twice, the second time synthesizing,
 * validating and diffing its objects again to write nothing. (The
 * ReplicaSet and Job controllers keep "expectations" of their own creations
 * for a related reason.)
 *
 * An echo queues nothing. Any other version (someone else's change) queues
 * the cluster as before, and the periodic resync still queues every
 * cluster: the loop stays level-triggered; only the trigger that carries
 * nothing new is dropped.
 *
 * The echo often arrives before the write's response is read (measured: for
 * half of the StatefulSets), so an event for an object with a write in
 * flight waits for that response: the echo is dropped then, any other
 * version is queued. A write that fails queues what waited.
 *
 * One entry per object written, removed by the object's next event whatever
 * version it carries: an echo that never comes (a relist skipped it) costs an
 * entry until the object's next event, never a missed change.
 */
import type { CachedObject, InformerEventType } from '../../kube/informer.js';

type Written = Pick<CachedObject, 'metadata'>;

interface WriteState {
  inFlight: boolean;
  /** The version the latest write returned. */
  version?: string;
  /** Events that came while the write was in flight: their version, and how to queue their cluster. */
  early: { version?: string; queue: () => void }[];
}

const keyOf = (kind: string, object: Written): string => `${kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;

export class WriteEchoes {
  private readonly writes = new Map<string, WriteState>();

  /** Runs `write` of `object` (a `kind`), noting the version it returns so that its echo queues nothing. */
  async track<T extends Written>(kind: string, object: Written, write: () => Promise<T>): Promise<T> {
    const key = keyOf(kind, object);
    const state: WriteState = { inFlight: true, early: [] };
    this.writes.set(key, state);
    let stored: T | undefined;
    try {
      stored = await write();
      return stored;
    } finally {
      this.settle(key, state, stored?.metadata.resourceVersion);
    }
  }

  /**
   * A watch event of `object`: `queue` its cluster now, once the write in
   * flight returns, or never (the echo of our write). A deletion is never an
   * echo: it queues at once.
   */
  observe(type: InformerEventType, kind: string, object: Written, queue: () => void): void {
    if (type === 'deleted') return queue();
    const key = keyOf(kind, object);
    const state = this.writes.get(key);
    if (!state) return queue();
    if (state.inFlight) {
      state.early.push({ version: object.metadata.resourceVersion, queue });
      return;
    }
    this.writes.delete(key);
    if (state.version !== object.metadata.resourceVersion) queue();
  }

  /** Objects written whose echo has not come yet, and writes in flight. */
  get size(): number {
    return this.writes.size;
  }

  private settle(key: string, state: WriteState, version: string | undefined): void {
    state.inFlight = false;
    state.version = version;
    const early = state.early.splice(0);
    // A later write of the same object took the entry over: its own echo is what counts.
    if (this.writes.get(key) !== state) {
      for (const event of early) event.queue();
      return;
    }
    let echoed = false;
    for (const event of early) {
      if (version !== undefined && event.version === version) echoed = true;
      else event.queue();
    }
    // A failed write (no version) has no echo to wait for.
    if (echoed || version === undefined) this.writes.delete(key);
  }
}
