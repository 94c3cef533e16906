/**
 * `dkv backup`: one backup of one cluster (backup/run-backup.ts), as the
 * backup CronJob's container runs it. Every option falls back to the
 * environment the CronJob sets, so the same image serves both.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../api/config.js';
import { EtcdMembership } from '../engines/etcd/membership.js';
import { clientUrl, memberName } from '../engines/etcd/peer-urls.js';
import { realClock } from '../kube/clock.js';
import { createLogger } from '../kube/log.js';
import { clusterIdentity } from '../model/cluster-identity.js';
import { ObjectStore } from '../backup/object-store.js';
import { SNAPSHOT_ANNOTATIONS, VolumeSnapshots } from '../backup/volume-snapshot.js';
import { KubeClient, resourcePath } from '../kube/client.js';
import { runEtcdBackup } from '../backup/run-backup.js';
import { BACKUP_LAYOUTS, parseS3Path, type BackupLayout } from '../backup/s3-location.js';
import { withEnvironment } from './s3-environment.js';
import { MAX_MEMBERS } from '../engines/etcd/certificates.js';
import { clientTlsFromDirectory } from '../engines/etcd/etcd-http.js';

export const BACKUP_USAGE = `usage: dkv backup [options]
  --cluster <name>          the DistributedKV (env DKV_CLUSTER_NAME)
  --namespace <ns>          its namespace (env DKV_CLUSTER_NAMESPACE, POD_NAMESPACE)
  --size <n>                its members (env DKV_CLUSTER_SIZE; default 9, the largest size): the ordinals
                            asked in turn for the membership until one answers
  --s3-path <s3://b/p>      the cluster's own folder: each backup goes in <s3-path>/<stamp>/ (env DKV_S3_PATH)
  --layout <folder|by-cluster>
                            folder: as above; by-cluster: the layout before, <s3-path>/<namespace>/<name>/<stamp>/
                            (env DKV_BACKUP_LAYOUT; default folder, but by-cluster when the S3 path comes from
                            DKV_S3_PATH without DKV_BACKUP_LAYOUT: a CronJob written before the change)
  --member <pod>=<url>      a member's client URL, instead of its DNS name through the headless Service (repeatable)
  --deadline-seconds <n>    give up after this long (default 3600)
  --config <file>           generator configuration (S3 endpoint, path style, retention); the CronJob
                            sets DKV_S3_ENDPOINT, DKV_S3_REGION, DKV_S3_FORCE_PATH_STYLE, DKV_S3_PART_SIZE_MIB
                            DKV_BACKUP_RETAIN, DKV_VOLUME_SNAPSHOT_CLASS and DKV_VOLUME_SNAPSHOT_READY_TIMEOUT_SECONDS
                            from the configuration that generated it, which win
Members with client TLS (spec.tls): DKV_TLS_DIR names the mounted client Secret (tls.crt, tls.key, ca.crt);
the members are then called over https with that certificate (the CronJob sets it).
With a VolumeSnapshotClass, a CSI VolumeSnapshot of the member's volume is cut too (the Kubernetes API
through the pod's ServiceAccount, or $KUBECONFIG).
Credentials: the AWS SDK's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, web identity, ...).
Exit codes: 0 backed up, 1 failed (the reason on stderr), 2 usage.`;

export async function backupCommand(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      cluster: { type: 'string' }, namespace: { type: 'string' }, size: { type: 'string' }, 's3-path': { type: 'string' }, layout: { type: 'string' },
      member: { type: 'string', multiple: true }, 'deadline-seconds': { type: 'string' }, config: { type: 'string' }, help: { type: 'boolean' },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(BACKUP_USAGE + '\n');
    return 0;
  }
  const name = values.cluster ?? env.DKV_CLUSTER_NAME;
  const namespace = values.namespace ?? env.DKV_CLUSTER_NAMESPACE ?? env.POD_NAMESPACE;
  const s3Path = values['s3-path'] ?? env.DKV_S3_PATH;
  // Without a size, every ordinal a cluster can have (the spec's maximum): the first that answers lists the members.
  const size = Number(values.size ?? env.DKV_CLUSTER_SIZE ?? MAX_MEMBERS);
  const deadlineSeconds = Number(values['deadline-seconds'] ?? '3600');
  const missing = [!name && '--cluster', !namespace && '--namespace', !s3Path && '--s3-path', !(size >= 1 && size <= MAX_MEMBERS) && `--size (1 to ${MAX_MEMBERS})`].filter(Boolean);
  const usage = (problem: string): number => {
    process.stderr.write(`dkv backup: ${problem}\n${BACKUP_USAGE}\n`);
    return 2;
  };
  if (missing.length > 0) return usage(`missing or invalid ${missing.join(', ')}`);
  if (!(deadlineSeconds > 0)) return usage('--deadline-seconds must be a positive number');
  // A CronJob written before the layout changed sets DKV_S3_PATH alone: its s3Path may be shared, so it keeps its namespace/name folder.
  const layout = values.layout ?? env.DKV_BACKUP_LAYOUT ?? (values['s3-path'] ? 'folder' : 'by-cluster');
  if (!(BACKUP_LAYOUTS as readonly string[]).includes(layout)) return usage(`--layout must be one of ${BACKUP_LAYOUTS.join(', ')} (got ${JSON.stringify(layout)})`);
  const badMember = (values.member ?? []).find((m) => m.indexOf('=') < 1);
  if (badMember) return usage(`--member ${badMember}: expected <pod>=<url>`);

  const config = withEnvironment(loadConfig(values.config), env);
  if (typeof config === 'string') return usage(config);
  let location;
  try {
    location = parseS3Path(s3Path!);
  } catch (e) {
    return usage((e as Error).message);
  }
  const identity = clusterIdentity(name!, config);
  // The client Secret the CronJob mounts when the members run client TLS (DKV_TLS_DIR: tls.crt, tls.key, ca.crt).
  let tls;
  try {
    tls = env.DKV_TLS_DIR ? clientTlsFromDirectory(env.DKV_TLS_DIR) : undefined;
  } catch (e) {
    return usage(`DKV_TLS_DIR ${env.DKV_TLS_DIR}: ${(e as Error).message}`);
  }
  const given = new Map((values.member ?? []).map((m) => [m.slice(0, m.indexOf('=')), m.slice(m.indexOf('=') + 1)] as const));
  const endpoint = (pod: string) => given.get(pod) ?? clientUrl(identity, pod, namespace!, config, tls !== undefined);
  const pods = Array.from({ length: size }, (_, i) => memberName(identity, i));
  const deadline = AbortSignal.timeout(deadlineSeconds * 1000);
  const store = ObjectStore.fromConfig(location.bucket, config.backup.s3);
  const log = createLogger(env.DKV_LOG_LEVEL ?? 'info', pino.destination(2), 'dkv-backup'); // stdout holds the one result line
  let kubeClient: KubeClient | undefined;
  try {
    const { volumeSnapshots } = config.backup;
    const volumes = volumeSnapshots.className ? KubeClient.fromKubeconfig() : undefined;
    kubeClient = volumes;
    // The generator's constructs (cdk8s) load only with volume snapshots: for the claim's name, not on every run's start.
    const { DATA_VOLUME } = volumes ? await import('../constructs/stateful-set.js') : { DATA_VOLUME: '' };
    // The spec the members run, as the controller hashed it onto their StatefulSet.
    const statefulSet = volumes && await volumes.request<{ metadata: { annotations?: Record<string, string> } }>('GET', resourcePath('apps/v1', 'StatefulSet', namespace, identity.statefulSetName));
    const specHash = statefulSet?.metadata.annotations?.[config.hashAnnotation];
    const result = await runEtcdBackup({
      cluster: { namespace: namespace!, name: name! }, location, layout: layout as BackupLayout, store,
      membership: new EtcdMembership(() => pods, endpoint, 5000, undefined, tls),
      endpoint, tls, retain: config.backup.retain, clock: realClock, log, signal: deadline,
      volumeSnapshots: volumes && {
        snapshots: new VolumeSnapshots(volumes, realClock),
        className: volumeSnapshots.className,
        claimOf: (pod) => `${DATA_VOLUME}-${pod}`,
        clusterLabels: identity.backupLabels,
        annotations: specHash ? { [SNAPSHOT_ANNOTATIONS.specHash]: specHash } : {},
        cutTimeoutMs: volumeSnapshots.readyTimeoutSeconds * 1000,
        readyTimeoutMs: volumeSnapshots.readyTimeoutSeconds * 1000,
      },
    });
    const file = result.manifest.files[0];
    const volume = result.manifest.volumeSnapshot;
    process.stdout.write(`${result.url} ${file.bytes} bytes sha256 ${file.sha256} from ${result.manifest.member.name}${volume ? `; volume snapshot ${volume.name} cut in ${volume.cutSeconds} s` : ''}${result.deleted.length > 0 ? `; deleted ${result.deleted.join(', ')}` : ''}\n`);
    return 0;
  } catch (e) {
    // The Job fails (and the CronJob's history shows it); the reason goes to the log and stderr.
    const reason = deadline.aborted ? `deadline of ${deadlineSeconds} s passed: ${(e as Error).message}` : (e as Error).message;
    log.error('backup failed', { reason });
    process.stderr.write(`dkv backup: failed: ${reason}\n`);
    return 1;
  } finally {
    store.close();
    kubeClient?.close();
  }
}
