import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import type { GeneratorConfig } from '../api/config.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import { restrictedContainerSecurityContext } from './pod-defaults.js';

export interface KVBackupCronJobProps {
  /** Names and labels shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** The spec's backup section, with backupImage defaulted. */
  readonly backup: NonNullable<DistributedKVSpec['backup']>;
  /** The generator configuration: the client port the backup container connects to, labels and annotations. */
  readonly config: GeneratorConfig;
}

/**
 * Periodic backups: a CronJob whose Jobs run the backup image against the
 * cluster's client Service and upload to the S3 path. Runs never overlap (a
 * slow backup is not raced by the next one), a run that could not start
 * within five minutes of its time is skipped rather than piled up, and only
 * the last three successful and failed Jobs are kept.
 */
export class KVBackupCronJob extends Construct {
  readonly apiObject: k8s.KubeCronJob;

  constructor(scope: Construct, id: string, props: KVBackupCronJobProps) {
    super(scope, id);
    const { identity, backup, config } = props;
    const labels = { ...identity.backupLabels };
    this.apiObject = new k8s.KubeCronJob(this, 'Resource', {
      metadata: { name: identity.backupCronJobName, labels, annotations: identity.annotations },
      spec: {
        schedule: backup.schedule,
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
                automountServiceAccountToken: false,
                enableServiceLinks: false,
                securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
                containers: [
                  {
                    name: 'backup',
                    image: backup.backupImage!, // defaulted by validation, as the API server defaults it
                    env: [
                      // The Service name resolves inside the cluster's own namespace, so the address does not depend on it.
                      { name: 'DKV_ENDPOINT', value: `${identity.clientServiceName}:${config.ports.client}` },
                      { name: 'DKV_S3_PATH', value: backup.s3Path },
                    ],
                    securityContext: restrictedContainerSecurityContext(),
                  },
                ],
              },
            },
          },
        },
      },
    });
  }
}
