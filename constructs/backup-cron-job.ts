import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import type { GeneratorConfig } from '../api/config.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import { ownBackupRunner } from '../model/backup-runner-image.js';
import { s3RunnerEnvironment } from './backup-runner.js';
import { resourceRequirements, restrictedContainerSecurityContext } from './pod-defaults.js';
import { clientTls } from '../engines/etcd/tls-files.js';
import { rootSecretName } from '../engines/etcd/client-identity-secrets.js';
import { PLAIN, type TlsInEffect } from '../model/tls.js';

export interface KVBackupCronJobProps {
  /** Names and labels shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** The spec's backup section. */
  readonly backup: NonNullable<DistributedKVSpec['backup']>;
  /** The generator configuration: the client port the backup container connects to, labels and annotations. */
  readonly config: GeneratorConfig;
  /**
   * `true`: no runs start (a standby in fleet mode); `false`: said explicitly (the active one, which may take
   * over from a standby's suspension); unset, what `dkv synth` writes, leaves `suspend` out.
   */
  readonly suspended?: boolean;
  /**
   * The TLS the members run: with client TLS, the runner gets the client
   * certificate Secret, mounted read-only, and DKV_TLS_DIR naming it.
   * @default plain HTTP
   */
  readonly tls?: TlsInEffect;
  /**
   * etcd authentication is on (spec.clients, docs/client-identities.md): the
   * runner mounts the root identity's Secret instead, because etcd serves a
   * snapshot to the root role only.
   * @default false
   */
  readonly authenticated?: boolean;
}

/**
 * Periodic backups: a CronJob whose Jobs run `dkv backup` (or the spec's own
 * backupImage) against the cluster's members and upload to the S3 path. Runs never overlap (a
 * slow backup is not raced by the next one), a run that could not start
 * within five minutes of its time is skipped rather than piled up, and only
 * the last three successful and failed Jobs are kept.
 */
export class KVBackupCronJob extends Construct {
  readonly apiObject: k8s.KubeCronJob;

  constructor(scope: Construct, id: string, props: KVBackupCronJobProps) {
    super(scope, id);
    const { identity, backup, config } = props;
    const ownRunner = ownBackupRunner(backup);
    const runner = s3RunnerEnvironment(config);
    const snapshots = config.backup.volumeSnapshots;
    const secured = clientTls(props.tls ?? PLAIN, config, identity, props.authenticated ? rootSecretName(config, identity) : undefined);
    const labels = { ...identity.backupLabels };
    this.apiObject = new k8s.KubeCronJob(this, 'Resource', {
      metadata: { name: identity.backupCronJobName, labels, annotations: identity.annotations },
      spec: {
        schedule: backup.schedule,
        ...(props.suspended !== undefined ? { suspend: props.suspended } : {}),
        concurrencyPolicy: 'Forbid',
        startingDeadlineSeconds: 300,
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 3,
        jobTemplate: {
          metadata: { labels: { ...labels } },
          spec: {
            backoffLimit: 2,
            template: {
              metadata: { labels: { ...labels }, annotations: identity.annotations },
              spec: {
                restartPolicy: 'Never',
                // Only a runner that cuts VolumeSnapshots talks to the Kubernetes API, as the ServiceAccount the configuration names.
                ...(snapshots.className
                  ? { serviceAccountName: snapshots.serviceAccountName, automountServiceAccountToken: true }
                  : { automountServiceAccountToken: false }),
                enableServiceLinks: false,
                // With TLS, the group that may read the mounted key (mode 0440).
                securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, ...(secured.volumes.length > 0 ? { fsGroup: 65532 } : {}), seccompProfile: { type: 'RuntimeDefault' } },
                containers: [
                  {
                    name: 'backup',
                    image: ownRunner ?? config.backup.runner.image,
                    // `dkv backup` reads everything from this environment; a runner of one's own gets the same.
                    ...(ownRunner ? {} : { command: ['dkv', 'backup'] }),
                    env: [
                      // The Service name resolves inside the cluster's own namespace, so the address does not depend on it.
                      { name: 'DKV_ENDPOINT', value: `${identity.clientServiceName}:${config.ports.client}` },
                      { name: 'DKV_S3_PATH', value: backup.s3Path },
                      // s3Path is the cluster's own folder (checked unshared); without this, a runner keeps the layout before: <s3Path>/<namespace>/<name>/.
                      { name: 'DKV_BACKUP_LAYOUT', value: 'folder' },
                      { name: 'DKV_CLUSTER_NAME', value: identity.name },
                      // No size: a resize would then change the CronJob too. The runner asks the ordinals in turn.
                      { name: 'DKV_CLUSTER_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                      ...runner.env,
                      { name: 'DKV_BACKUP_RETAIN', value: String(backup.retain ?? config.backup.retain) },
                      ...(snapshots.className ? [
                        { name: 'DKV_VOLUME_SNAPSHOT_CLASS', value: snapshots.className },
                        { name: 'DKV_VOLUME_SNAPSHOT_READY_TIMEOUT_SECONDS', value: String(snapshots.readyTimeoutSeconds) },
                      ] : []),
                      ...secured.env,
                    ],
                    envFrom: runner.envFrom,
                    resources: resourceRequirements(config.backup.runner.resources),
                    securityContext: restrictedContainerSecurityContext(),
                    volumeMounts: secured.volumeMounts.length > 0 ? secured.volumeMounts : undefined,
                  },
                ],
                volumes: secured.volumes.length > 0 ? secured.volumes : undefined,
              },
            },
          },
        },
      },
    });
  }
}
