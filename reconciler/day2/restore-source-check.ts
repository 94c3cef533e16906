/**
 * Whether a backup in S3 can be restored: its manifest read with the
 * configuration's S3 settings and the controller's own credentials (the AWS
 * SDK's default chain), the ones the restore init containers get from the
 * configuration's Secret. The restore-source step (restore-source.ts) asks
 * it before a restoring cluster's objects are created; tests give another.
 */
import { BackupSourceError, readBackupManifest } from '../../backup/backup-source.js';
import type { S3Credentials } from '../../backup/object-store.js';
import { parseBackupUrl } from '../../backup/s3-location.js';
import type { GeneratorConfig } from '../../model/generator-config.js';

/** Why a restore cannot start from `from`, or undefined when it can. */
export type RestoreSourceCheck = (from: string, engine: string) => Promise<string | undefined>;

/** Reads each backup's manifest from S3, as the configuration says to reach it (credentials: the default chain unless given). */
export function s3RestoreSourceCheck(s3: GeneratorConfig['backup']['s3'], credentials?: S3Credentials): RestoreSourceCheck {
  return async (from, engine) => {
    let source;
    try {
      source = parseBackupUrl(from);
    } catch (e) {
      return (e as Error).message;
    }
    // Loaded on the first restore, not at start: the S3 client adds about 25 MB to every controller process.
    const { ObjectStore } = await import('../../backup/object-store.js');
    const store = ObjectStore.fromConfig(source.bucket, s3, credentials);
    try {
      await readBackupManifest(store, source, engine);
      return undefined;
    } catch (e) {
      if (e instanceof BackupSourceError) return e.message;
      return `cannot read the backup at ${from}: ${(e as Error).message}`;
    } finally {
      store.close();
    }
  };
}
