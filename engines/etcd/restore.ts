/**
 * `dkv restore` for one etcd member (restore-container.ts runs it before
 * etcd starts): the member's data directory from one backup, or nothing.
 *
 *   - a member that has a data directory keeps it: a restore is never in
 *     place (the pod restarted, or the volume holds data already);
 *   - a member that joins a running cluster (`existing`, added after the
 *     restore) starts empty and copies from the others, as any new member;
 *   - otherwise the backup's manifest is read and checked (backup-source.ts),
 *     its snapshot streamed onto the member's volume and checked against the
 *     manifest's sha256, and `etcdutl snapshot restore` (which checks etcd's
 *     own hash inside the snapshot) writes the data directory.
 *
 * Everything is written under `<data-dir>.restoring` and renamed into place
 * last, so a run killed part-way leaves no data directory: the next run
 * (the kubelet restarts a failed init container) starts over.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { downloadVerifiedSnapshot, readBackupManifest } from '../../backup/backup-source.js';
import type { ObjectStore } from '../../backup/object-store.js';
import type { BackupFolder } from '../../backup/s3-location.js';
import type { Logger } from '../../kube/log.js';

export interface EtcdMemberRestore {
  readonly source: BackupFolder;
  readonly store: ObjectStore;
  /** The member's own settings, exactly as its etcd container has them (member-settings.ts). */
  readonly dataDir: string;
  readonly name: string;
  readonly initialCluster: string;
  readonly initialClusterState: string;
  readonly initialClusterToken: string;
  readonly initialAdvertisePeerUrls: string;
  /** The `etcdutl` binary (the runner's image ships it next to dkv). */
  readonly etcdutl: string;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

export type RestoreOutcome =
  | { readonly kind: 'skipped'; readonly reason: string }
  | { readonly kind: 'restored'; readonly bytes: number; readonly sha256: string; readonly takenAt: string; readonly from: string };

export class RestoreError extends Error {}

export async function restoreEtcdMember(restore: EtcdMemberRestore): Promise<RestoreOutcome> {
  const { dataDir, name, log } = restore;
  if (existsSync(dataDir)) return { kind: 'skipped', reason: `${dataDir} exists: ${name} keeps its data (a restore is never in place)` };
  if (restore.initialClusterState !== 'new') {
    return { kind: 'skipped', reason: `${name} joins the running cluster (initial cluster state ${JSON.stringify(restore.initialClusterState)}): it starts empty and copies from the others` };
  }
  const work = `${dataDir}.restoring`;
  rmSync(work, { recursive: true, force: true }); // what a killed run left
  mkdirSync(work, { recursive: true, mode: 0o700 });
  const manifest = await readBackupManifest(restore.store, restore.source, 'etcd');
  const snapshot = join(work, 'snapshot.db');
  log.info('downloading the backup', { from: `s3://${restore.source.bucket}/${restore.source.folder}`, takenAt: manifest.startedAt });
  const file = await downloadVerifiedSnapshot(restore.store, restore.source, manifest, snapshot, restore.signal);
  const restored = join(work, 'data');
  await etcdutl(restore.etcdutl, [
    'snapshot', 'restore', snapshot,
    `--data-dir=${restored}`,
    `--name=${name}`,
    `--initial-cluster=${restore.initialCluster}`,
    `--initial-cluster-token=${restore.initialClusterToken}`,
    `--initial-advertise-peer-urls=${restore.initialAdvertisePeerUrls}`,
  ], restore.signal);
  renameSync(restored, dataDir);
  rmSync(work, { recursive: true, force: true });
  return { kind: 'restored', bytes: file.bytes, sha256: file.sha256, takenAt: manifest.startedAt, from: `s3://${restore.source.bucket}/${restore.source.folder}` };
}

function etcdutl(binary: string, args: string[], signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'], signal });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    child.on('error', (e) => reject(new RestoreError(`cannot run ${binary}: ${e.message}`)));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new RestoreError(`${binary} snapshot restore failed (exit ${code}): ${stderr.trim()}`))));
  });
}
