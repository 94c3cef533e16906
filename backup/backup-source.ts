/**
 * A backup as a restore reads it: its manifest first (a folder without one
 * is an unfinished backup, never restored), checked for the engine that
 * will restore it; then its data, whose size and sha256 must be the
 * manifest's. Shared by the controller, which checks a `restore.from`
 * before it creates anything, and by `dkv restore`, which checks again
 * before a member starts on the data.
 */
import type { BackupDownload } from '../engines/etcd/restore.js';
import type { BackupFile, BackupManifest } from './manifest.js';
import type { ObjectStore } from './object-store.js';
import { MANIFEST_FILE, SNAPSHOT_FILE, type BackupFolder } from './s3-location.js';

/** Why a backup cannot be restored: the message names the location and what is wrong with it. */
export class BackupSourceError extends Error {}

const url = (source: BackupFolder, file = ''): string => `s3://${source.bucket}/${source.folder}${file}`;

/** The backup's manifest, when it is whole and the engine can restore it. */
export async function readBackupManifest(store: ObjectStore, source: BackupFolder, engine: string): Promise<BackupManifest> {
  let value: unknown;
  try {
    value = await store.getJson(`${source.folder}${MANIFEST_FILE}`);
  } catch (e) {
    const reason = e instanceof SyntaxError ? 'is not JSON' : `cannot be read: ${(e as Error).message}`;
    throw new BackupSourceError(`${url(source, MANIFEST_FILE)} ${reason}`);
  }
  if (value === undefined) {
    throw new BackupSourceError(`no backup at ${url(source)}: it has no ${MANIFEST_FILE} (a backup is whole only once its manifest is written)`);
  }
  const manifest = value as Partial<BackupManifest>;
  if (manifest.kind !== 'BackupManifest' || !Array.isArray(manifest.files)) {
    throw new BackupSourceError(`${url(source, MANIFEST_FILE)} is not a backup manifest (kind ${JSON.stringify(manifest.kind)})`);
  }
  if (manifest.engine !== engine) {
    throw new BackupSourceError(`the backup at ${url(source)} was taken by the ${JSON.stringify(manifest.engine)} engine; this cluster runs ${JSON.stringify(engine)}, which cannot restore it`);
  }
  if (!snapshotFile(manifest as BackupManifest)) {
    throw new BackupSourceError(`the backup at ${url(source)} lists no ${SNAPSHOT_FILE} in its manifest`);
  }
  return manifest as BackupManifest;
}

/** The manifest's entry for the store's data. */
export function snapshotFile(manifest: BackupManifest): BackupFile | undefined {
  return manifest.files.find((f) => f.name === SNAPSHOT_FILE);
}

/** Downloads the backup's data into `file`, and fails unless its size and sha256 are the manifest's. */
export async function downloadVerifiedSnapshot(store: ObjectStore, source: BackupFolder, manifest: BackupManifest, file: string, signal?: AbortSignal): Promise<BackupFile> {
  const expected = snapshotFile(manifest)!;
  const got = await store.download(`${source.folder}${expected.name}`, file, signal);
  if (got.bytes !== expected.bytes || got.sha256 !== expected.sha256) {
    throw new BackupSourceError(`${url(source, expected.name)} does not match its manifest: ${got.bytes} bytes sha256 ${got.sha256}, `
      + `the manifest says ${expected.bytes} bytes sha256 ${expected.sha256}`);
  }
  return expected;
}

/** The backup as an engine's restore takes it (engines/etcd/restore.ts): its manifest read and checked first, then its data against it. */
export function backupDownload(store: ObjectStore, source: BackupFolder, engine: string): BackupDownload {
  let manifest: BackupManifest | undefined;
  return {
    from: url(source),
    async manifest() {
      manifest = await readBackupManifest(store, source, engine);
      return { takenAt: manifest.startedAt };
    },
    async download(file, signal) {
      if (!manifest) throw new Error(`the manifest of ${url(source)} is read before its data`);
      return downloadVerifiedSnapshot(store, source, manifest, file, signal);
    },
  };
}
