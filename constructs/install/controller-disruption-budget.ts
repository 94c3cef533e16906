import { Construct } from 'constructs';
import { JsonPatch } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerDisruptionBudgetProps {
  /** Its name and the controller pods' selector. */
  readonly identity: ControllerIdentity;
}

/**
 * Drains take the controller's replicas one at a time, so a standby is
 * there to take the Lease over while the other moves. Stated as
 * `maxUnavailable: 1` rather than `minAvailable: 1`: the same with two
 * replicas, and with one replica it still lets a node drain (a minimum of
 * one would block every eviction of the only pod).
 */
export class ControllerDisruptionBudget extends Construct {
  readonly apiObject: k8s.KubePodDisruptionBudget;

  constructor(scope: Construct, id: string, props: ControllerDisruptionBudgetProps) {
    super(scope, id);
    const { identity } = props;
    this.apiObject = new k8s.KubePodDisruptionBudget(this, 'Resource', {
      metadata: { name: identity.name, namespace: identity.namespace, labels: { ...identity.labels } },
      spec: { maxUnavailable: k8s.IntOrString.fromNumber(1), selector: { matchLabels: { ...identity.selector } } },
    });
    // A crash-looping replica cannot lose anything to an eviction; without this it would block drains.
    // The k8s 1.27 imports predate the field.
    this.apiObject.addJsonPatch(JsonPatch.add('/spec/unhealthyPodEvictionPolicy', 'AlwaysAllow'));
  }
}
