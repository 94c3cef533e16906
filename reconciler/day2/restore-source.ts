/**
 * A cluster created with `spec.restore.from` is created only from a backup
 * that exists, is whole and was taken by the engine that will restore it:
 * the controller reads the backup's manifest (or the VolumeSnapshot) before
 * it writes any of the cluster's objects. A bad source is Degraded/RestoreSourceInvalid, naming
 * the location and the problem, with nothing created; it is looked at again
 * with the retry backoff (the backup may still be uploading, S3 may be
 * down). Once the members exist, they restored (or are restoring) and the
 * source is not read again.
 * A backup in S3 is checked by restore-source-check.ts.
 */
import { isS3Source } from '../../backup/s3-location.js';
import { SNAPSHOT_ANNOTATIONS, VOLUME_SNAPSHOTS } from '../../backup/volume-snapshot.js';
import { KubeApiError, resourcePath, type KubeClient } from '../../kube/client.js';
import { equalitySelector } from '../../kube/label-selector.js';
import { PROCEED, type CheckDecision } from '../core/step-decision.js';
import type { RestoreSourceCheck } from './restore-source-check.js';

/** A VolumeSnapshot, as far as the check reads it. */
export interface VolumeSnapshotLike {
  readonly metadata: { readonly annotations?: Record<string, string>; readonly deletionTimestamp?: string };
  readonly status?: { readonly readyToUse?: boolean; readonly error?: { readonly message?: string } };
}

/** What the check reads, in the cluster's namespace, only when the cluster is about to be created. */
export interface RestoreSourceReader {
  /** Whether any of the cluster's member volumes exists already. */
  memberVolumesExist(): Promise<boolean>;
  /** Why the backup in S3 cannot be restored, if it cannot (restore-source-check.ts). */
  s3Problem(from: string): Promise<string | undefined>;
  /** The VolumeSnapshot of that name, or undefined when there is none (or the cluster serves no VolumeSnapshots). */
  volumeSnapshot(name: string): Promise<VolumeSnapshotLike | undefined>;
}

export interface RestoreSourceInput {
  /** `spec.restore.from`, if set. */
  readonly from?: string;
  readonly namespace: string;
  /** The engine that will restore it (the configuration's). */
  readonly engine: string;
  /** Whether the cluster has a StatefulSet of its own already. */
  readonly hasStatefulSet: boolean;
}

/**
 * Refuses, for now, to create a cluster from its `restore.from` when the
 * source cannot be restored. Asked only when the cluster is about to be
 * created: it has no StatefulSet and no member volumes yet (a StatefulSet
 * replaced for a storage change keeps the volumes, and is recreated without
 * asking S3).
 */
export async function restoreSourceDecision(input: RestoreSourceInput, read: RestoreSourceReader): Promise<CheckDecision> {
  const { from } = input;
  if (!from || input.hasStatefulSet) return PROCEED;
  if (await read.memberVolumesExist()) return PROCEED;
  const problem = isS3Source(from) ? await read.s3Problem(from) : volumeSnapshotProblem(await read.volumeSnapshot(from), from, input.namespace, input.engine);
  return problem ? { kind: 'refuse', reason: 'RestoreSourceInvalid', message: `spec.restore.from: ${problem}; nothing was created`, retry: 'backoff' } : PROCEED;
}

/** Why the members' volumes cannot be created from this VolumeSnapshot: it must exist, be ready, and come from a backup of this engine. */
export function volumeSnapshotProblem(snapshot: VolumeSnapshotLike | undefined, name: string, namespace: string, engine: string): string | undefined {
  if (!snapshot) return `no VolumeSnapshot ${name} in namespace ${namespace} (or this cluster serves no VolumeSnapshots)`;
  const taken = snapshot.metadata.annotations?.[SNAPSHOT_ANNOTATIONS.engine];
  if (!taken) return `VolumeSnapshot ${name} was not cut by dkv backup (it has no ${SNAPSHOT_ANNOTATIONS.engine} annotation): which engine's data it holds is unknown`;
  if (taken !== engine) return `VolumeSnapshot ${name} holds data of the ${JSON.stringify(taken)} engine; this cluster runs ${JSON.stringify(engine)}, which cannot restore it`;
  if (snapshot.metadata.deletionTimestamp) return `VolumeSnapshot ${name} is being deleted`;
  if (snapshot.status?.error?.message) return `VolumeSnapshot ${name} failed: ${snapshot.status.error.message}`;
  if (snapshot.status?.readyToUse !== true) return `VolumeSnapshot ${name} is not ready to use yet`;
  return undefined;
}

/** The reader against the API server: the member claims by the members' labels, the VolumeSnapshot by name. */
export function restoreSourceReader(
  client: KubeClient, namespace: string, memberLabels: Readonly<Record<string, string>>, check: RestoreSourceCheck, engine: string,
): RestoreSourceReader {
  return {
    async memberVolumesExist() {
      const claims = await client.request<{ items: unknown[] }>('GET', resourcePath('v1', 'PersistentVolumeClaim', namespace), { query: { labelSelector: equalitySelector(memberLabels), limit: 1 } });
      return claims.items.length > 0;
    },
    s3Problem: (from) => check(from, engine),
    async volumeSnapshot(name) {
      try {
        return await client.request<VolumeSnapshotLike>('GET', `${VOLUME_SNAPSHOTS}/namespaces/${encodeURIComponent(namespace)}/volumesnapshots/${encodeURIComponent(name)}`);
      } catch (e) {
        if (e instanceof KubeApiError && e.status === 404) return undefined;
        throw e;
      }
    },
  };
}
