/**
 * One backup of one etcd cluster (`dkv backup`):
 *
 *   1. read the membership and pick a healthy follower (the leader only when
 *      no follower is healthy: a snapshot costs the member that serves it);
 *   2. stream its logical snapshot (engines/etcd/snapshot.ts: consistent by
 *      itself, so nothing is quiesced) into `snapshot.db`, hashing as it goes;
 *   3. write `manifest.json` last, so a backup exists only once it is whole;
 *   4. delete what the retention keeps no longer (backup/retention.ts).
 *
 * Every run writes a new folder: a run killed part-way leaves a folder
 * without a manifest (and a multipart upload the store aborts), which no
 * reader trusts and a later success sweeps away. A deadline bounds the run.
 */
import { etcdSnapshot } from '../engines/etcd/snapshot.js';
import type { Membership, MemberStatus } from '../engines/membership.js';
import type { Clock } from '../kube/clock.js';
import type { Logger } from '../kube/log.js';
import type { BackupManifest } from './manifest.js';
import type { ObjectStore } from './object-store.js';
import { backupsToDelete } from './retention.js';
import { backupStamp, clusterFolder, MANIFEST_FILE, SNAPSHOT_FILE, type S3Location } from './s3-location.js';

export interface BackupRun {
  readonly cluster: { readonly namespace: string; readonly name: string };
  readonly location: S3Location;
  readonly store: ObjectStore;
  readonly membership: Membership;
  /** Where a member's client API is. */
  readonly endpoint: (pod: string) => string;
  readonly retain: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** Aborts the snapshot and the upload (a deadline, SIGTERM). */
  readonly signal?: AbortSignal;
}

export interface BackupResult {
  readonly manifest: BackupManifest;
  /** The backup's folder, `s3://bucket/prefix/ns/name/stamp/`. */
  readonly url: string;
  /** Folders the retention deleted. */
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
  const folder = clusterFolder(run.location, run.cluster.namespace, run.cluster.name);
  const stamp = backupStamp(started);
  const log = run.log.child({ cluster: `${run.cluster.namespace}/${run.cluster.name}`, backup: stamp, member: source.name });
  log.info('backup started', { role: source.leader ? 'leader' : 'follower' });

  const snapshot = await run.store.upload(`${folder}${stamp}/${SNAPSHOT_FILE}`, etcdSnapshot(run.endpoint(source.name), run.signal), run.signal);
  const manifest: BackupManifest = {
    apiVersion: 'dkv.example.com/v1',
    kind: 'BackupManifest',
    cluster: run.cluster,
    engine: 'etcd',
    member: { name: source.name, version: source.version },
    startedAt: started.toISOString(),
    finishedAt: new Date(run.clock.now()).toISOString(),
    files: [{ name: SNAPSHOT_FILE, ...snapshot }],
  };
  await run.store.putJson(`${folder}${stamp}/${MANIFEST_FILE}`, manifest);
  log.info('backup written', { bytes: snapshot.bytes, sha256: snapshot.sha256 });

  const deleted: string[] = [];
  for (const old of backupsToDelete(await run.store.listBackups(folder), run.retain)) {
    await run.store.deleteFolder(`${folder}${old.stamp}/`);
    deleted.push(old.stamp);
  }
  if (deleted.length > 0) log.info('old backups deleted', { deleted });
  return { manifest, url: `s3://${run.location.bucket}/${folder}${stamp}/`, deleted };
}
