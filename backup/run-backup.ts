/**
 * One backup of one etcd cluster (`dkv backup`):
 *
 *   1. read the membership and pick a healthy follower (the leader only when
 *      no follower is healthy: a snapshot costs the member that serves it);
 *   2. stream its logical snapshot (engines/etcd/snapshot.ts: consistent by
 *      itself, so nothing is quiesced) into `snapshot.db`, hashing as it goes
 *      (one request sized by the snapshot's announced length: object-store.ts);
 *   3. with volume snapshots on, cut a CSI VolumeSnapshot of the same
 *      member's volume first (volume-snapshot.ts): etcd's data on disk is
 *      crash-consistent (the WAL is synced before a write is acknowledged),
 *      so the engine has nothing to quiesce; the window from asking to the
 *      cut is measured and recorded all the same. The snapshot must be ready
 *      to use before the backup counts;
 *   4. write `manifest.json` last, so a backup exists only once it is whole;
 *   5. delete what the retention keeps no longer (backup/retention.ts), with
 *      its VolumeSnapshot, and VolumeSnapshots of runs that failed; backups
 *      in the cluster's legacy folder count too (s3-location.ts).
 *
 * Every run writes a new folder: a run killed part-way leaves a folder
 * without a manifest (and a multipart upload the store aborts), which no
 * reader trusts and a later success sweeps away. A deadline bounds the run.
 */
import { streamEtcdSnapshot } from '../engines/etcd/snapshot.js';
import type { EtcdClientTls } from '../engines/etcd/etcd-http.js';
import type { Membership, MemberStatus } from '../engines/membership.js';
import type { Clock } from '../kube/clock.js';
import type { Logger } from '../kube/log.js';
import type { BackupManifest } from './manifest.js';
import type { ObjectStore } from './object-store.js';
import { backupsToDelete, type StoredBackup } from './retention.js';
import { SNAPSHOT_ANNOTATIONS, SNAPSHOT_LABELS, type VolumeSnapshots } from './volume-snapshot.js';
import { backupStamp, clusterFolders, MANIFEST_FILE, SNAPSHOT_FILE, type BackupLayout, type ClusterFolders, type S3Location } from './s3-location.js';

export interface BackupRun {
  readonly cluster: { readonly namespace: string; readonly name: string };
  readonly location: S3Location;
  /** How backups are placed under the location (s3-location.ts): `folder` unless the CronJob predates it. */
  readonly layout: BackupLayout;
  readonly store: ObjectStore;
  readonly membership: Membership;
  /** Where a member's client API is. */
  readonly endpoint: (pod: string) => string;
  /** The client certificate for https:// members (the cluster runs client TLS). */
  readonly tls?: EtcdClientTls;
  readonly retain: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** Aborts the snapshot and the upload (a deadline, SIGTERM). */
  readonly signal?: AbortSignal;
  /** CSI VolumeSnapshots of the member backed up; undefined: none. */
  readonly volumeSnapshots?: VolumeSnapshotPlan;
}

export interface VolumeSnapshotPlan {
  readonly snapshots: VolumeSnapshots;
  readonly className: string;
  /** The member's claim. */
  readonly claimOf: (pod: string) => string;
  /** The cluster's own labels: the snapshots of one cluster are found by them. */
  readonly clusterLabels: Readonly<Record<string, string>>;
  /** More that the snapshot says about itself (the spec hash of the members it was cut from). */
  readonly annotations?: Readonly<Record<string, string>>;
  readonly cutTimeoutMs: number;
  readonly readyTimeoutMs: number;
}

/** A backup's VolumeSnapshot name: the member and the backup's stamp, lower-cased (`kv-1-20261123t093000123z`). */
export function volumeSnapshotName(pod: string, stamp: string): string {
  return `${pod}-${stamp.toLowerCase().replace('.', '')}`;
}

export interface BackupResult {
  readonly manifest: BackupManifest;
  /** The backup's folder, `s3://bucket/prefix/stamp/`. */
  readonly url: string;
  /** Folders the retention deleted, relative to the cluster's: `<stamp>`, or `<namespace>/<name>/<stamp>` in the legacy folder. */
  readonly deleted: readonly string[];
}

export class BackupError extends Error {}

/** The member to take the snapshot from: a healthy follower, else a healthy leader. */
export function snapshotSource(members: readonly MemberStatus[]): MemberStatus | undefined {
  const healthy = members.filter((m) => m.healthy && !m.learner && m.name);
  return healthy.filter((m) => !m.leader).at(-1) ?? healthy.find((m) => m.leader);
}

export async function runEtcdBackup(run: BackupRun): Promise<BackupResult> {
  const started = new Date(run.clock.now());
  const status = await run.membership.status().catch((e: Error) => {
    throw new BackupError(`no member of ${run.cluster.namespace}/${run.cluster.name} answered: ${e.message}`);
  });
  const source = snapshotSource(status.members);
  if (!source) {
    throw new BackupError(`no healthy member of ${run.cluster.namespace}/${run.cluster.name} to take a snapshot from: `
      + status.members.map((m) => `${m.name || m.id} (${m.problem ?? (m.learner ? 'learner' : 'unhealthy')})`).join(', '));
  }
  const folders = clusterFolders(run.location, run.cluster, run.layout);
  const folder = folders.current;
  const stamp = backupStamp(started);
  const log = run.log.child({ cluster: `${run.cluster.namespace}/${run.cluster.name}`, backup: stamp, member: source.name });
  log.info('backup started', { role: source.leader ? 'leader' : 'follower' });

  const plan = run.volumeSnapshots;
  const namespace = run.cluster.namespace;
  let volumeSnapshot: BackupManifest['volumeSnapshot'];
  let snapshot;
  const snapshotName = volumeSnapshotName(source.name, stamp);
  try {
    const cut = plan && await plan.snapshots.cut({
      namespace, name: snapshotName, claim: plan.claimOf(source.name), className: plan.className,
      labels: { ...plan.clusterLabels, [SNAPSHOT_LABELS.backup]: stamp, [SNAPSHOT_LABELS.member]: source.name },
      annotations: { ...plan.annotations, [SNAPSHOT_ANNOTATIONS.engine]: 'etcd', [SNAPSHOT_ANNOTATIONS.serverVersion]: source.version ?? '', [SNAPSHOT_ANNOTATIONS.takenAt]: started.toISOString() },
    }, plan.cutTimeoutMs, run.signal);
    if (cut) log.info('volume snapshot cut', { volumeSnapshot: cut.name, creationTime: cut.creationTime, cutMs: Math.round(cut.cutMs) });
    snapshot = await run.store.upload(`${folder}${stamp}/${SNAPSHOT_FILE}`, (sink, onLength) => streamEtcdSnapshot(run.endpoint(source.name), sink, run.signal, run.tls, onLength), run.signal);
    if (plan && cut) {
      const restoreSize = await plan.snapshots.ready(namespace, cut.name, plan.readyTimeoutMs, run.signal);
      volumeSnapshot = { namespace, name: cut.name, claim: plan.claimOf(source.name), creationTime: cut.creationTime, restoreSize, cutSeconds: Math.round(cut.cutMs) / 1000 };
      log.info('volume snapshot ready', { volumeSnapshot: cut.name, restoreSize });
    }
  } catch (e) {
    // A backup that failed leaves no VolumeSnapshot to pay for (best effort: the retention sweeps what remains).
    if (plan) await plan.snapshots.delete(namespace, snapshotName).catch(() => undefined);
    throw e;
  }
  const manifest: BackupManifest = {
    apiVersion: 'dkv.example.com/v1',
    kind: 'BackupManifest',
    cluster: run.cluster,
    engine: 'etcd',
    member: { name: source.name, version: source.version },
    startedAt: started.toISOString(),
    finishedAt: new Date(run.clock.now()).toISOString(),
    files: [{ name: SNAPSHOT_FILE, ...snapshot }],
    ...(volumeSnapshot ? { volumeSnapshot } : {}),
  };
  await run.store.putJson(`${folder}${stamp}/${MANIFEST_FILE}`, manifest);
  log.info('backup written', { bytes: snapshot.bytes, sha256: snapshot.sha256 });

  const deleted: string[] = [];
  for (const old of backupsToDelete(await storedBackups(run, folders), run.retain)) {
    await run.store.deleteFolder(old.folder);
    deleted.push(old.folder.slice(folder.length, -1));
  }
  if (deleted.length > 0) log.info('old backups deleted', { deleted });
  if (plan) await sweepVolumeSnapshots(run, plan, folders, log);
  return { manifest, url: `s3://${run.location.bucket}/${folder}${stamp}/`, deleted };
}

/** Every backup of the cluster, in each of its folders. */
async function storedBackups(run: BackupRun, folders: ClusterFolders): Promise<StoredBackup[]> {
  return (await Promise.all(folders.all.map((f) => run.store.listBackups(f)))).flat();
}

/**
 * Deletes the cluster's VolumeSnapshots whose backup is gone: deleted by the
 * retention, or never finished (older than the newest complete backup and
 * without a manifest). A snapshot newer than every complete backup may be a
 * run under way and is left alone.
 */
async function sweepVolumeSnapshots(run: BackupRun, plan: VolumeSnapshotPlan, folders: ClusterFolders, log: Logger): Promise<void> {
  const backups = await storedBackups(run, folders);
  const complete = new Set(backups.filter((b) => b.complete).map((b) => b.stamp));
  const newest = [...complete].sort().at(-1);
  const selector = Object.entries(plan.clusterLabels).map(([k, v]) => `${k}=${v}`).concat(SNAPSHOT_LABELS.backup).join(',');
  for (const snapshot of await plan.snapshots.list(run.cluster.namespace, selector)) {
    const stamp = snapshot.labels[SNAPSHOT_LABELS.backup];
    if (!stamp || complete.has(stamp) || !newest || stamp > newest) continue;
    await plan.snapshots.delete(run.cluster.namespace, snapshot.name);
    log.info('volume snapshot deleted with its backup', { volumeSnapshot: snapshot.name, backup: stamp });
  }
}
