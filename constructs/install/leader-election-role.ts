import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';
import { controllerSubject } from './controller-service-account.js';

export interface LeaderElectionRoleProps {
  /** The ServiceAccount and the namespace the Lease lives in ($POD_NAMESPACE, the controller's own). */
  readonly identity: ControllerIdentity;
}

/**
 * Leases, in the controller's own namespace only. Leader election
 * (kube/leader.ts) reads its one Lease (GET), creates it when missing
 * (POST) and renews or takes it over (PUT); sharded replicas (`--shards
 * auto`, kube/shard-membership.ts) each do the same with a Lease named
 * after their own identity (the pod's name, unknown here), list their
 * group's and delete those of replicas long dead. So the rules cannot name
 * the Leases: `create` never can (the name is in the body), and `get`,
 * `list`, `update`, `delete` cover the namespace, whose Leases are the
 * controller's.
 */
export class LeaderElectionRole extends Construct {
  readonly role: k8s.KubeRole;

  constructor(scope: Construct, id: string, props: LeaderElectionRoleProps) {
    super(scope, id);
    const { identity } = props;
    const metadata = { name: `${identity.name}-leader-election`, namespace: identity.namespace, labels: { ...identity.labels } };
    this.role = new k8s.KubeRole(this, 'Resource', {
      metadata,
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        // Sharded replicas' Leases have names only known at run time; without --shards, only the one Lease is used.
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'update', 'delete'] },
      ],
    });
    new k8s.KubeRoleBinding(this, 'Binding', {
      metadata: { ...metadata, labels: { ...metadata.labels } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: metadata.name },
      subjects: [controllerSubject(identity)],
    });
  }
}
