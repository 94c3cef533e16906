import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';

/** The name a namespace's RoleBinding refers to (deploy/README.md shows one). */
export const BACKUP_RUNNER_CLUSTER_ROLE = 'dkv-backup-runner';

/**
 * The VolumeSnapshot it cuts of the member it backs up, waits for, and the
 * ones whose backup the retention deleted.
 */
const VOLUME_SNAPSHOTS: k8s.PolicyRule = { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ['create', 'get', 'list', 'delete'] };

/** The members' StatefulSet: its desired hash annotates the snapshot (the spec the data ran under). */
const STATEFUL_SETS: k8s.PolicyRule = { apiGroups: ['apps'], resources: ['statefulsets'], verbs: ['get'] };

export const BACKUP_RUNNER_RULES: readonly k8s.PolicyRule[] = [VOLUME_SNAPSHOTS, STATEFUL_SETS];

export interface BackupRunnerClusterRoleProps {
  /** The bundle's labels. */
  readonly identity: ControllerIdentity;
}

/**
 * What a backup runner (`dkv backup`) needs when the configuration turns CSI
 * volume snapshots on (backup.volumeSnapshots.className), and nothing else:
 * without volume snapshots the runner uses no Kubernetes API (its token is
 * not even mounted). The role is shared; each namespace that runs clusters
 * with volume snapshots binds it, with a RoleBinding, to the ServiceAccount
 * the configuration names (backup.volumeSnapshots.serviceAccountName), as
 * deploy/README.md shows: the runner's rights stay inside that namespace.
 */
export class BackupRunnerClusterRole extends Construct {
  readonly apiObject: k8s.KubeClusterRole;

  constructor(scope: Construct, id: string, props: BackupRunnerClusterRoleProps) {
    super(scope, id);
    this.apiObject = new k8s.KubeClusterRole(this, 'Resource', {
      metadata: { name: BACKUP_RUNNER_CLUSTER_ROLE, labels: { ...props.identity.labels } },
      rules: BACKUP_RUNNER_RULES.map((r) => ({ ...r })),
    });
  }
}
