import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { GeneratorConfig } from '../api/config.js';
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import type { LabelSelector } from '../model/label-selector.js';

export interface KVNetworkPolicyProps {
  /** Name, labels and the member and backup pod selectors shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** The spec's networkPolicy section: who else may reach the client port. @default every pod of the cluster's namespace */
  readonly networkPolicy?: DistributedKVSpec['networkPolicy'];
  /** The ports, and the metrics scrapers' and the controller's selectors. */
  readonly config: GeneratorConfig;
}

/** Every pod of the policy's own namespace: a peer with an empty pod selector and no namespace selector. */
const SAME_NAMESPACE: k8s.NetworkPolicyPeer = { podSelector: {} };

/** A copy, so that no object of the configuration or the spec is shared with (and mutated by) the rendered one. */
function selector(s: LabelSelector): k8s.LabelSelector {
  return {
    ...(s.matchLabels ? { matchLabels: { ...s.matchLabels } } : {}),
    ...(s.matchExpressions ? { matchExpressions: s.matchExpressions.map((e) => ({ key: e.key, operator: e.operator, ...(e.values ? { values: [...e.values] } : {}) })) } : {}),
  };
}

function tcp(port: number): k8s.NetworkPolicyPort {
  return { port: k8s.IntOrString.fromNumber(port), protocol: 'TCP' };
}

/**
 * Whether a cluster gets a NetworkPolicy: unless the configuration turns
 * them off for every cluster (a network plugin that enforces none) or its
 * spec for its own.
 */
export function hasNetworkPolicy(spec: Pick<DistributedKVSpec, 'networkPolicy'>, config: GeneratorConfig): boolean {
  return config.networkPolicy.enabled && spec.networkPolicy?.enabled !== false;
}

/**
 * The NetworkPolicy of a cluster's members: it selects the member pods (the
 * same selector as the StatefulSet's) and admits, port by port,
 *
 * - peer: the cluster's own members, and no one else: a pod that reached it
 *   could join itself to the membership or read the raft log;
 * - client: the pods the spec's networkPolicy.clients allows (by default
 *   every pod of the cluster's namespace), the cluster's backup Jobs (which
 *   snapshot a member through it), and the controller's pods in their own
 *   namespace (membership, health and maintenance calls);
 * - metrics: every pod of the namespaces the configuration's
 *   metricsNamespaceSelector selects (the scrapers').
 *
 * Anything else to the members is refused where the network plugin
 * enforces NetworkPolicies. The kubelet's probes (on the metrics port) are
 * not: NetworkPolicies always admit a pod's own node. Egress is not
 * restricted.
 */
export class KVNetworkPolicy extends Construct {
  readonly apiObject: k8s.KubeNetworkPolicy;

  constructor(scope: Construct, id: string, props: KVNetworkPolicyProps) {
    super(scope, id);
    const { identity, config } = props;
    const { ports, networkPolicy } = config;
    const clients = props.networkPolicy?.clients?.map((c) => ({
      ...(c.podSelector ? { podSelector: selector(c.podSelector as LabelSelector) } : {}),
      ...(c.namespaceSelector ? { namespaceSelector: selector(c.namespaceSelector as LabelSelector) } : {}),
    })) ?? [SAME_NAMESPACE];
    const members: k8s.NetworkPolicyPeer = { podSelector: { matchLabels: { ...identity.selector } } };
    const backups: k8s.NetworkPolicyPeer = { podSelector: { matchLabels: { ...identity.backupSelector } } };
    const controller: k8s.NetworkPolicyPeer = {
      namespaceSelector: selector(networkPolicy.controller.namespaceSelector),
      podSelector: selector(networkPolicy.controller.podSelector),
    };
    this.apiObject = new k8s.KubeNetworkPolicy(this, 'Resource', {
      metadata: { name: identity.networkPolicyName, labels: { ...identity.serverLabels }, annotations: identity.annotations },
      spec: {
        podSelector: { matchLabels: { ...identity.selector } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [members], ports: [tcp(ports.peer)] },
          { from: [...clients, backups, controller], ports: [tcp(ports.client)] },
          { from: [{ namespaceSelector: selector(networkPolicy.metricsNamespaceSelector) }], ports: [tcp(ports.metrics)] },
        ],
      },
    });
  }
}
