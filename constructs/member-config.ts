import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ClusterIdentity } from '../model/cluster-identity.js';

export interface KVMemberConfigProps {
  readonly identity: ClusterIdentity;
  /** The engine's environment for members that start now (Engine.memberConfig). */
  readonly data: Record<string, string>;
}

/**
 * What a member reads once, when it starts: how to join. Apart from the pod
 * template, so that a membership change (one member added or removed)
 * changes this and the StatefulSet's replicas, and no running member is
 * restarted.
 */
export class KVMemberConfig extends Construct {
  readonly apiObject: k8s.KubeConfigMap;

  constructor(scope: Construct, id: string, props: KVMemberConfigProps) {
    super(scope, id);
    const { identity, data } = props;
    this.apiObject = new k8s.KubeConfigMap(this, 'Resource', {
      metadata: { name: identity.memberConfigName, labels: { ...identity.serverLabels }, annotations: identity.annotations },
      data,
    });
  }
}
