/**
 * `dkv restore` for one etcd member (restore-container.ts runs it before
 * etcd starts): the member's data directory from one backup, or nothing.
 *
 * From a backup in S3:
 *   - a member that has a data directory keeps it: a restore is never in
 *     place (the pod restarted, or the volume holds data already);
 *   - a member that joins a running cluster (`existing`, added after the
 *     restore) starts empty and copies from the others, as any new member;
 *   - otherwise the backup's manifest is read and checked (backup/backup-source.ts),
 *     its snapshot streamed onto the member's volume and checked against the
 *     manifest's sha256, and `etcdutl snapshot restore` (which checks etcd's
 *     own hash inside the snapshot) writes the data directory.
 *
 * From a VolumeSnapshot, the volume already holds a copy of the member the
 * snapshot was cut from, its identity included, which no other member may
 * start with: the copy's database is restored as this member's own
 * (`etcdutl snapshot restore --skip-hash-check`: a database file copied
 * from a volume carries no appended hash), once, which `<data-dir>.restored`
 * records; a member joining later drops the copy and starts empty.
 *
 * Everything is written under `<data-dir>.restoring` and renamed into place
 * last, so a run killed part-way leaves no data directory: the next run
 * (the kubelet restarts a failed init container) starts over.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../kube/log.js';

/**
 * One backup in S3, as the engine needs it: where it is, its manifest read
 * and checked, and its data downloaded and checked against the manifest.
 * backup/backup-source.ts does both (`dkv restore` hands it in), so the
 * engine knows nothing of where backups live or how they are laid out.
 */
export interface BackupDownload {
  /** `s3://bucket/folder/`, for messages. */
  readonly from: string;
  /** Reads and checks the backup's manifest; throws when the backup cannot be restored. */
  manifest(): Promise<{ readonly takenAt?: string }>;
  /** Downloads the data into `file`; throws unless its size and sha256 are the manifest's. */
  download(file: string, signal?: AbortSignal): Promise<{ readonly bytes: number; readonly sha256: string }>;
}

/** Where the data comes from: a backup in S3, or the VolumeSnapshot the member's volume was created from. */
export type RestoreSource =
  | { readonly kind: 's3'; readonly backup: BackupDownload }
  | { readonly kind: 'volumeSnapshot'; readonly name: string };

export interface EtcdMemberRestore {
  readonly source: RestoreSource;
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
  | { readonly kind: 'restored'; readonly bytes: number; readonly sha256: string; readonly takenAt?: string; readonly from: string };

export class RestoreError extends Error {}

export async function restoreEtcdMember(restore: EtcdMemberRestore): Promise<RestoreOutcome> {
  return restore.source.kind === 's3' ? restoreFromS3(restore, restore.source) : restoreFromVolume(restore, restore.source.name);
}

async function restoreFromS3(restore: EtcdMemberRestore, source: Extract<RestoreSource, { kind: 's3' }>): Promise<RestoreOutcome> {
  const { dataDir, name, log } = restore;
  if (existsSync(dataDir)) return { kind: 'skipped', reason: `${dataDir} exists: ${name} keeps its data (a restore is never in place)` };
  if (restore.initialClusterState !== 'new') return joinsEmpty(restore);
  const work = freshWorkDirectory(dataDir);
  const { takenAt } = await source.backup.manifest();
  const snapshot = join(work, 'snapshot.db');
  const { from } = source.backup;
  log.info('downloading the backup', { from, takenAt });
  const file = await source.backup.download(snapshot, restore.signal);
  await restoreInto(restore, snapshot, work, []);
  return { kind: 'restored', bytes: file.bytes, sha256: file.sha256, takenAt, from };
}

async function restoreFromVolume(restore: EtcdMemberRestore, snapshotName: string): Promise<RestoreOutcome> {
  const { dataDir, name } = restore;
  const marker = `${dataDir}.restored`;
  if (existsSync(marker)) return { kind: 'skipped', reason: `${name} was restored from VolumeSnapshot ${snapshotName} before: it keeps its data` };
  if (restore.initialClusterState !== 'new') {
    // The volume was created from the snapshot too: that copy is another member's, never this one's.
    rmSync(dataDir, { recursive: true, force: true });
    writeFileSync(marker, `joined empty; the copy of VolumeSnapshot ${snapshotName} was removed\n`);
    return joinsEmpty(restore);
  }
  const copy = `${dataDir}.snapshot`;
  if (!existsSync(copy)) {
    if (!existsSync(join(dataDir, 'member', 'snap', 'db'))) {
      throw new RestoreError(`${dataDir} holds no etcd data: the volume was not created from VolumeSnapshot ${snapshotName} (the claim's dataSource), or the snapshot holds no etcd member`);
    }
    renameSync(dataDir, copy);
  }
  const database = join(copy, 'member', 'snap', 'db');
  const bytes = statSync(database).size;
  const sha256 = await sha256Of(database);
  await restoreInto(restore, database, freshWorkDirectory(dataDir), ['--skip-hash-check']);
  rmSync(copy, { recursive: true, force: true });
  writeFileSync(marker, `restored from VolumeSnapshot ${snapshotName}\n`);
  return { kind: 'restored', bytes, sha256, from: `VolumeSnapshot ${snapshotName}` };
}

function joinsEmpty(restore: EtcdMemberRestore): RestoreOutcome {
  return { kind: 'skipped', reason: `${restore.name} joins the running cluster (initial cluster state ${JSON.stringify(restore.initialClusterState)}): it starts empty and copies from the others` };
}

/** `<data-dir>.restoring`, emptied of what a killed run left. */
function freshWorkDirectory(dataDir: string): string {
  const work = `${dataDir}.restoring`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true, mode: 0o700 });
  return work;
}

/** etcdutl writes the member's data directory under `work`; it is renamed into place last. */
async function restoreInto(restore: EtcdMemberRestore, database: string, work: string, extra: string[]): Promise<void> {
  const restored = join(work, 'data');
  await etcdutl(restore.etcdutl, [
    'snapshot', 'restore', database, ...extra,
    `--data-dir=${restored}`,
    `--name=${restore.name}`,
    `--initial-cluster=${restore.initialCluster}`,
    `--initial-cluster-token=${restore.initialClusterToken}`,
    `--initial-advertise-peer-urls=${restore.initialAdvertisePeerUrls}`,
  ], restore.signal);
  renameSync(restored, restore.dataDir);
  rmSync(work, { recursive: true, force: true });
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Runs `etcdutl` (a snapshot restore) to completion; its stderr's tail is the error. */
export function etcdutl(binary: string, args: string[], signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'], signal });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    child.on('error', (e) => reject(new RestoreError(`cannot run ${binary}: ${e.message}`)));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new RestoreError(`${binary} snapshot restore failed (exit ${code}): ${stderr.trim()}`))));
  });
}
