import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerServiceAccountProps {
  /** Its name and namespace. */
  readonly identity: ControllerIdentity;
}

/**
 * The identity the controller talks to the API server as: the subject of
 * its ClusterRole's and its leader-election Role's bindings, and nothing else.
 */
export class ControllerServiceAccount extends Construct {
  readonly apiObject: k8s.KubeServiceAccount;

  constructor(scope: Construct, id: string, props: ControllerServiceAccountProps) {
    super(scope, id);
    const { identity } = props;
    this.apiObject = new k8s.KubeServiceAccount(this, 'Resource', {
      metadata: { name: identity.name, namespace: identity.namespace, labels: { ...identity.labels } },
    });
  }
}

/** The RBAC subject for the controller's ServiceAccount. */
export function controllerSubject(identity: ControllerIdentity): k8s.Subject {
  return { kind: 'ServiceAccount', name: identity.name, namespace: identity.namespace };
}
