import { Construct } from 'constructs';
import { JsonPatch } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import { allowedDisruptions } from '../model/quorum.js';

export interface KVDisruptionBudgetProps {
  /** Name and the pod selector shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** Number of members (spec.size). */
  readonly size: number;
}

/**
 * The PodDisruptionBudget of a cluster: keeps a majority of the members
 * available through voluntary disruptions (for three or more members) while
 * never making a node drain impossible. It is stated as `maxUnavailable`, so
 * it follows the StatefulSet when the cluster is resized.
 */
export class KVDisruptionBudget extends Construct {
  readonly apiObject: k8s.KubePodDisruptionBudget;

  constructor(scope: Construct, id: string, props: KVDisruptionBudgetProps) {
    super(scope, id);
    const { identity, size } = props;
    this.apiObject = new k8s.KubePodDisruptionBudget(this, 'Resource', {
      metadata: { name: identity.podDisruptionBudgetName, labels: { ...identity.serverLabels }, annotations: identity.annotations },
      spec: {
        maxUnavailable: k8s.IntOrString.fromNumber(allowedDisruptions(size)),
        selector: { matchLabels: { ...identity.selector } },
      },
    });
    // A member that is not running cannot lose anything more to an eviction; without this
    // a crash-looping member would block every drain. The k8s 1.27 imports predate the field.
    this.apiObject.addJsonPatch(JsonPatch.add('/spec/unhealthyPodEvictionPolicy', 'AlwaysAllow'));
  }
}
