/**
 * `dkv restore`: one etcd member's data directory from one backup
 * (engines/etcd/restore.ts), as the restore init container runs it before
 * etcd starts. The S3 settings come from the environment the StatefulSet
 * sets (constructs/backup-runner.ts); credentials from the AWS SDK's chain.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../api/config.js';
import { backupDownload, BackupSourceError } from '../backup/backup-source.js';
import { ObjectStore } from '../backup/object-store.js';
import { isS3Source, parseBackupUrl, S3PathError, type BackupFolder } from '../backup/s3-location.js';
import { restoreEtcdMember, RestoreError, type RestoreSource } from '../engines/etcd/restore.js';
import { createLogger } from '../kube/log.js';
import { withEnvironment } from './s3-environment.js';

export const RESTORE_USAGE = `usage: dkv restore --from <s3://bucket/prefix/stamp/ | VolumeSnapshot> --data-dir <dir> --name <member>
                   --initial-cluster <name=url,...> --initial-cluster-state <new|existing>
                   --initial-cluster-token <token> --initial-advertise-peer-urls <url> [--etcdutl <path>]
  Restores one etcd member's data directory from a backup, unless the directory exists (a restore is
  never in place) or the member joins a running cluster (state existing). The backup's snapshot must
  match its manifest's sha256. From a VolumeSnapshot (the name), the volume already holds the copy the
  snapshot was cut from: its database becomes this member's own, once. S3 settings: DKV_S3_ENDPOINT, DKV_S3_REGION, DKV_S3_FORCE_PATH_STYLE
  (or --config); credentials: the AWS SDK's default chain. --etcdutl defaults to DKV_ETCDUTL, else
  etcdutl on the PATH.
Exit codes: 0 restored or nothing to restore, 1 failed (the reason on stderr), 2 usage.`;

const REQUIRED = ['from', 'data-dir', 'name', 'initial-cluster', 'initial-cluster-state', 'initial-cluster-token', 'initial-advertise-peer-urls'] as const;

export async function restoreCommand(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      ...Object.fromEntries(REQUIRED.map((name) => [name, { type: 'string' as const }])),
      etcdutl: { type: 'string' }, config: { type: 'string' }, 'deadline-seconds': { type: 'string' }, help: { type: 'boolean' },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(RESTORE_USAGE + '\n');
    return 0;
  }
  const usage = (problem: string): number => {
    process.stderr.write(`dkv restore: ${problem}\n${RESTORE_USAGE}\n`);
    return 2;
  };
  const given = values as Record<string, string | boolean | undefined>;
  const option = (name: (typeof REQUIRED)[number]): string => given[name] as string;
  const missing = REQUIRED.filter((name) => !given[name]);
  if (missing.length > 0) return usage(`missing ${missing.map((m) => `--${m}`).join(', ')}`);
  const deadlineSeconds = Number(values['deadline-seconds'] ?? '3600');
  if (!(deadlineSeconds > 0)) return usage('--deadline-seconds must be a positive number');
  const from = option('from');
  let folder: BackupFolder | undefined;
  if (isS3Source(from)) {
    try {
      folder = parseBackupUrl(from);
    } catch (e) {
      if (e instanceof S3PathError) return usage(`--from: ${e.message}`);
      throw e;
    }
  } else if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(from)) {
    return usage(`--from: ${JSON.stringify(from)} is neither one backup's folder in S3 nor a VolumeSnapshot's name`);
  }
  const config = withEnvironment(loadConfig(values.config), env);
  if (typeof config === 'string') return usage(config);

  const log = createLogger(env.DKV_LOG_LEVEL ?? 'info', pino.destination(2), 'dkv-restore');
  const store = folder && ObjectStore.fromConfig(folder.bucket, config.backup.s3);
  const source: RestoreSource = folder && store ? { kind: 's3', backup: backupDownload(store, folder, 'etcd') } : { kind: 'volumeSnapshot', name: from };
  const deadline = AbortSignal.timeout(deadlineSeconds * 1000);
  try {
    const outcome = await restoreEtcdMember({
      source,
      dataDir: option('data-dir'),
      name: option('name'),
      initialCluster: option('initial-cluster'),
      initialClusterState: option('initial-cluster-state'),
      initialClusterToken: option('initial-cluster-token'),
      initialAdvertisePeerUrls: option('initial-advertise-peer-urls'),
      etcdutl: values.etcdutl ?? env.DKV_ETCDUTL ?? 'etcdutl',
      log, signal: deadline,
    });
    process.stdout.write(outcome.kind === 'restored'
      ? `restored ${option('name')} from ${outcome.from}${outcome.takenAt ? ` (taken ${outcome.takenAt})` : ''}: ${outcome.bytes} bytes sha256 ${outcome.sha256}${folder ? ', as its manifest says' : ''}\n`
      : `nothing restored: ${outcome.reason}\n`);
    return 0;
  } catch (e) {
    const known = e instanceof BackupSourceError || e instanceof RestoreError;
    const reason = deadline.aborted ? `deadline of ${deadlineSeconds} s passed: ${(e as Error).message}` : (e as Error).message;
    log.error('restore failed', { reason });
    process.stderr.write(`dkv restore: failed: ${reason}\n`);
    if (!known && !deadline.aborted) log.error('unexpected error', { stack: (e as Error).stack });
    return 1;
  } finally {
    store?.close();
  }
}
