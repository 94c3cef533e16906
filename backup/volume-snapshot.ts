/**
 * A CSI VolumeSnapshot (`snapshot.storage.k8s.io/v1`) of one member's
 * volume, as part of a backup: created labelled and annotated so that it
 * describes itself (cluster, member, backup, engine and server version,
 * time), then watched until it is cut (`status.creationTime`: the point in
 * time the volume holds) and until it is ready to use. The two are apart on
 * purpose: a store quiesced for the snapshot is released at the cut, not
 * when the storage has finished copying (often minutes later).
 *
 * The snapshot is named after the backup (`<statefulSet>-<member ordinal>-
 * <stamp>`), so a retried run finds the one it created instead of cutting a
 * second, and retention finds it by its labels.
 */
import { KubeApiError, type KubeClient } from '../kube/client.js';
import type { Clock } from '../kube/clock.js';

export const VOLUME_SNAPSHOTS = '/apis/snapshot.storage.k8s.io/v1';

/** Labels and annotations a backup's VolumeSnapshot carries, besides the cluster's own labels. */
export const SNAPSHOT_LABELS = { backup: 'dkv.example.com/backup', member: 'dkv.example.com/member' } as const;
export const SNAPSHOT_ANNOTATIONS = {
  engine: 'dkv.example.com/engine',
  serverVersion: 'dkv.example.com/server-version',
  takenAt: 'dkv.example.com/taken-at',
  /** The desired hash of the StatefulSet whose member was snapshotted: which spec the data ran under. */
  specHash: 'dkv.example.com/spec-hash',
} as const;

export class VolumeSnapshotError extends Error {}

export interface VolumeSnapshotSpec {
  readonly namespace: string;
  readonly name: string;
  /** The member's claim. */
  readonly claim: string;
  readonly className: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface CutSnapshot {
  readonly name: string;
  /** The point in time the snapshot holds (status.creationTime). */
  readonly creationTime: string;
  /** From asking for the snapshot to seeing it cut. */
  readonly cutMs: number;
}

interface VolumeSnapshotObject {
  metadata: { name: string; uid?: string; deletionTimestamp?: string };
  status?: { creationTime?: string; readyToUse?: boolean; restoreSize?: string; error?: { message?: string; time?: string } };
}

const path = (namespace: string, name?: string) => `${VOLUME_SNAPSHOTS}/namespaces/${encodeURIComponent(namespace)}/volumesnapshots${name ? `/${encodeURIComponent(name)}` : ''}`;

export class VolumeSnapshots {
  /**
   * The cut is polled often (a quiesced store waits for it, bench:snapshot-window
   * measures the window), readiness seldom (it takes as long as the storage copies).
   */
  constructor(private readonly client: KubeClient, private readonly clock: Clock, private readonly polls = { cutMs: 50, readyMs: 500 }) {}

  /** Creates the snapshot (or finds the one a retried run created) and waits until it is cut. */
  async cut(spec: VolumeSnapshotSpec, deadlineMs: number, signal?: AbortSignal): Promise<CutSnapshot> {
    const asked = this.clock.monotonic();
    await this.client.request('POST', path(spec.namespace), {
      body: {
        apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshot',
        metadata: { name: spec.name, namespace: spec.namespace, labels: spec.labels, annotations: spec.annotations },
        spec: { volumeSnapshotClassName: spec.className, source: { persistentVolumeClaimName: spec.claim } },
      },
    }).catch((e) => {
      if (!(e instanceof KubeApiError && e.status === 409)) throw this.explain(e, spec.namespace);
    });
    const cut = await this.until(spec.namespace, spec.name, (s) => s.status?.creationTime, 'cut', asked + deadlineMs, this.polls.cutMs, signal);
    return { name: spec.name, creationTime: cut, cutMs: this.clock.monotonic() - asked };
  }

  /** Waits until the snapshot is ready to use, returning its size. */
  async ready(namespace: string, name: string, deadlineMs: number, signal?: AbortSignal): Promise<string | undefined> {
    const ready = await this.until(namespace, name, (s) => (s.status?.readyToUse ? { size: s.status.restoreSize } : undefined), 'ready to use', this.clock.monotonic() + deadlineMs, this.polls.readyMs, signal);
    return ready.size;
  }

  /** The snapshots of one cluster carrying `selector`, by name. */
  async list(namespace: string, selector: string): Promise<{ name: string; labels: Record<string, string> }[]> {
    const list = await this.client.request<{ items: { metadata: { name: string; labels?: Record<string, string> } }[] }>('GET', path(namespace), { query: { labelSelector: selector } })
      .catch((e) => {
        throw this.explain(e, namespace);
      });
    return list.items.map((s) => ({ name: s.metadata.name, labels: s.metadata.labels ?? {} }));
  }

  async delete(namespace: string, name: string): Promise<void> {
    await this.client.request('DELETE', path(namespace, name)).catch((e) => {
      if (!(e instanceof KubeApiError && e.status === 404)) throw e;
    });
  }

  private async until<T>(namespace: string, name: string, test: (s: VolumeSnapshotObject) => T | undefined, what: string, deadline: number, pollMs: number, signal?: AbortSignal): Promise<T> {
    for (;;) {
      signal?.throwIfAborted();
      const snapshot = await this.client.request<VolumeSnapshotObject>('GET', path(namespace, name));
      const value = test(snapshot);
      if (value !== undefined) return value;
      if (snapshot.status?.error?.message) throw new VolumeSnapshotError(`VolumeSnapshot ${namespace}/${name} failed: ${snapshot.status.error.message}`);
      if (snapshot.metadata.deletionTimestamp) throw new VolumeSnapshotError(`VolumeSnapshot ${namespace}/${name} is being deleted`);
      if (this.clock.monotonic() > deadline) throw new VolumeSnapshotError(`VolumeSnapshot ${namespace}/${name} was not ${what} in time`);
      await new Promise<void>((resolve) => this.clock.after(pollMs, resolve));
    }
  }

  private explain(e: unknown, namespace: string): unknown {
    if (e instanceof KubeApiError && e.status === 404) return new VolumeSnapshotError(`VolumeSnapshots are not served by this cluster (install the snapshot CRDs and controller), or namespace ${namespace} does not exist`);
    if (e instanceof KubeApiError && e.status === 403) return new VolumeSnapshotError(`not allowed to use VolumeSnapshots in ${namespace}: bind the runner's ServiceAccount to the ClusterRole dkv-backup-runner with a RoleBinding in ${namespace}, as deploy/README.md shows (${e.message})`);
    return e;
  }
}
