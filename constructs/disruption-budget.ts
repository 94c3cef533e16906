import { Construct } from 'constructs';
import { JsonPatch } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import { MEMBERS_DISRUPTED_AT_ONCE } from '../model/quorum.js';

export interface KVDisruptionBudgetProps {
  /** Name and the pod selector shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
}

/**
 * The PodDisruptionBudget of a cluster: one member at a time through
 * voluntary disruptions (model/quorum.ts says why), never making a node
 * drain impossible. It is stated as `maxUnavailable`, so it follows the
 * StatefulSet when the cluster is resized.
 */
export class KVDisruptionBudget extends Construct {
  readonly apiObject: k8s.KubePodDisruptionBudget;

  constructor(scope: Construct, id: string, props: KVDisruptionBudgetProps) {
    super(scope, id);
    const { identity } = props;
    this.apiObject = new k8s.KubePodDisruptionBudget(this, 'Resource', {
      metadata: { name: identity.podDisruptionBudgetName, labels: { ...identity.serverLabels }, annotations: identity.annotations },
      spec: {
        maxUnavailable: k8s.IntOrString.fromNumber(MEMBERS_DISRUPTED_AT_ONCE),
        selector: { matchLabels: { ...identity.selector } },
      },
    });
    // A member that is not running cannot lose anything more to an eviction; without this
    // a crash-looping member would block every drain. The k8s 1.27 imports predate the field.
    this.apiObject.addJsonPatch(JsonPatch.add('/spec/unhealthyPodEvictionPolicy', 'AlwaysAllow'));
  }
}
