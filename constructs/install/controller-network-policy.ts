import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { GeneratorConfig } from '../../api/config.js';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerNetworkPolicyProps {
  readonly identity: ControllerIdentity;
  /** The conversion webhook's port (conversion.port) and who may scrape (networkPolicy.metricsNamespaceSelector). */
  readonly config: GeneratorConfig;
}

/**
 * Who may reach the controller's pods (docs/security.md, "The controller's
 * own namespace and endpoints"). Its metrics listener (`/metrics`, with every
 * tenant's cluster names in its labels, and `/healthz`, `/readyz`) admits only
 * the namespaces the configuration lets scrape the members
 * (networkPolicy.metricsNamespaceSelector); the conversion webhook's port
 * admits every source, because the API server calls it from addresses no
 * selector names (its host's, outside any pod network). Nothing else
 * reaches the controller: it serves nothing else. Egress is left open: it
 * calls the API server, every cluster's members and the S3 endpoints, whose
 * addresses are the user's.
 *
 * Kubelet probes come from the node, which the common network plugins let
 * through whatever a policy says. Omitted with networkPolicy.enabled: false,
 * as the clusters' are (a plugin that enforces none).
 */
/** A copy of a configuration's label selector, as the generated object's own (cdk8s keeps no reference to the configuration). */
function labelSelector(selector: GeneratorConfig['networkPolicy']['metricsNamespaceSelector']): k8s.LabelSelector {
  return {
    ...(selector.matchLabels ? { matchLabels: { ...selector.matchLabels } } : {}),
    ...(selector.matchExpressions ? { matchExpressions: selector.matchExpressions.map((e) => ({ ...e, values: e.values && [...e.values] })) } : {}),
  };
}

export class ControllerNetworkPolicy extends Construct {
  readonly apiObject: k8s.KubeNetworkPolicy;

  constructor(scope: Construct, id: string, props: ControllerNetworkPolicyProps) {
    super(scope, id);
    const { identity, config } = props;
    const selector = config.networkPolicy.metricsNamespaceSelector;
    this.apiObject = new k8s.KubeNetworkPolicy(this, 'Resource', {
      metadata: { name: identity.name, namespace: identity.namespace, labels: { ...identity.labels } },
      spec: {
        podSelector: { matchLabels: { ...identity.selector } },
        policyTypes: ['Ingress'],
        ingress: [
          { ports: [{ port: k8s.IntOrString.fromNumber(config.conversion.port), protocol: 'TCP' }] },
          {
            from: [{ namespaceSelector: labelSelector(selector) }],
            ports: [{ port: k8s.IntOrString.fromNumber(identity.metricsPort), protocol: 'TCP' }],
          },
        ],
      },
    });
  }
}
