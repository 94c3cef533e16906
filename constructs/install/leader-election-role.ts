import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';
import { controllerSubject } from './controller-service-account.js';

export interface LeaderElectionRoleProps {
  /** The ServiceAccount and the namespace the Lease lives in ($POD_NAMESPACE, the controller's own). */
  readonly identity: ControllerIdentity;
  /** The Lease replicas elect a leader through (controller.leaseName in the configuration). */
  readonly leaseName: string;
}

/**
 * Leader election (kube/leader.ts): only the one Lease, in the controller's
 * own namespace. The elector reads it (GET), creates it when missing (POST)
 * and renews or takes it over (PUT). `create` cannot be limited to a name
 * (the name is in the body, not the URL), so it has a rule of its own; the
 * rest is limited to the Lease's name.
 */
export class LeaderElectionRole extends Construct {
  readonly role: k8s.KubeRole;

  constructor(scope: Construct, id: string, props: LeaderElectionRoleProps) {
    super(scope, id);
    const { identity, leaseName } = props;
    const metadata = { name: `${identity.name}-leader-election`, namespace: identity.namespace, labels: { ...identity.labels } };
    this.role = new k8s.KubeRole(this, 'Resource', {
      metadata,
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [leaseName], verbs: ['get', 'update'] },
      ],
    });
    new k8s.KubeRoleBinding(this, 'Binding', {
      metadata: { ...metadata, labels: { ...metadata.labels } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: metadata.name },
      subjects: [controllerSubject(identity)],
    });
  }
}
