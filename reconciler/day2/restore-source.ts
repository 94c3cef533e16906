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
import { KubeApiError, resourcePath } from '../../kube/client.js';
import type { ValidResource } from '../../api/validate.js';
import type { CachedObject } from '../../kube/informer.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import type { ReconcileContext } from '../core/reconcile-context.js';
import { equalitySelector } from '../../kube/label-selector.js';

/**
 * Why this cluster cannot be created from its `restore.from`, when it is
 * about to be created: it has no StatefulSet and no member volumes yet (a
 * StatefulSet replaced for a storage change keeps the volumes, and is
 * recreated without asking S3).
 */
export async function restoreSourceProblem(ctx: ReconcileContext, owned: readonly CachedObject[], resource: ValidResource): Promise<string | undefined> {
  const from = resource.spec.restore?.from;
  if (!from || owned.some((o) => o.kind === 'StatefulSet')) return undefined;
  const identity = clusterIdentity(resource.metadata.name, ctx.config);
  const selector = equalitySelector(identity.serverLabels);
  const claims = await ctx.client.request<{ items: unknown[] }>('GET', resourcePath('v1', 'PersistentVolumeClaim', resource.metadata.namespace), { query: { labelSelector: selector, limit: 1 } });
  if (claims.items.length > 0) return undefined;
  const problem = isS3Source(from) ? await ctx.restoreSourceCheck(from, ctx.config.engine) : await volumeSnapshotProblem(ctx, resource.metadata.namespace!, from);
  return problem && `spec.restore.from: ${problem}; nothing was created`;
}

/** Why the members' volumes cannot be created from this VolumeSnapshot: it must exist, be ready, and come from a backup of this engine. */
async function volumeSnapshotProblem(ctx: ReconcileContext, namespace: string, name: string): Promise<string | undefined> {
  let snapshot: { metadata: { annotations?: Record<string, string>; deletionTimestamp?: string }; status?: { readyToUse?: boolean; error?: { message?: string } } };
  try {
    snapshot = await ctx.client.request('GET', `${VOLUME_SNAPSHOTS}/namespaces/${encodeURIComponent(namespace)}/volumesnapshots/${encodeURIComponent(name)}`);
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return `no VolumeSnapshot ${name} in namespace ${namespace} (or this cluster serves no VolumeSnapshots)`;
    throw e;
  }
  const engine = snapshot.metadata.annotations?.[SNAPSHOT_ANNOTATIONS.engine];
  if (!engine) return `VolumeSnapshot ${name} was not cut by dkv backup (it has no ${SNAPSHOT_ANNOTATIONS.engine} annotation): which engine's data it holds is unknown`;
  if (engine !== ctx.config.engine) return `VolumeSnapshot ${name} holds data of the ${JSON.stringify(engine)} engine; this cluster runs ${JSON.stringify(ctx.config.engine)}, which cannot restore it`;
  if (snapshot.metadata.deletionTimestamp) return `VolumeSnapshot ${name} is being deleted`;
  if (snapshot.status?.error?.message) return `VolumeSnapshot ${name} failed: ${snapshot.status.error.message}`;
  if (snapshot.status?.readyToUse !== true) return `VolumeSnapshot ${name} is not ready to use yet`;
  return undefined;
}
