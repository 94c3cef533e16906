import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerNamespaceProps {
  /** The namespace's name and the bundle's labels. */
  readonly identity: ControllerIdentity;
}

/**
 * The namespace the controller runs in. It comes first in the bundle, so a
 * single `kubectl apply -f` creates it before the objects that live in it.
 * Nothing else runs there: the clusters the controller reconciles live in
 * their own namespaces.
 */
export class ControllerNamespace extends Construct {
  readonly apiObject: k8s.KubeNamespace;

  constructor(scope: Construct, id: string, props: ControllerNamespaceProps) {
    super(scope, id);
    const { identity } = props;
    // The restricted Pod Security Standard enforced on the namespace, not only met by the Deployment: a pod that is
    // not the controller's (a debugging pod, a compromised ServiceAccount's) is held to it too.
    const podSecurity = { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' };
    this.apiObject = new k8s.KubeNamespace(this, 'Resource', { metadata: { name: identity.namespace, labels: { ...identity.labels, ...podSecurity } } });
  }
}
