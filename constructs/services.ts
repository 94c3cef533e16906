import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { GeneratorConfig } from '../api/config.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';

export interface KVServicesProps {
  /** Names and the pod selector shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** The generator configuration: the server's client and peer ports. */
  readonly config: GeneratorConfig;
}

/**
 * The two Services of a cluster.
 *
 * The governing headless Service (named by the StatefulSet's serviceName)
 * gives every member a stable DNS name, `<pod>.<headless>.<namespace>.svc`.
 * It publishes members before they are ready, because members must reach
 * each other to become ready: hiding unready peers would stop a cluster from
 * ever forming a quorum.
 *
 * The client Service load-balances client traffic over ready members only.
 */
export class KVServices extends Construct {
  readonly headless: k8s.KubeService;
  readonly client: k8s.KubeService;

  constructor(scope: Construct, id: string, props: KVServicesProps) {
    super(scope, id);
    const { identity, config } = props;
    const metadata = (name: string): k8s.ObjectMeta => ({ name, labels: { ...identity.serverLabels }, annotations: identity.annotations });
    this.headless = new k8s.KubeService(this, 'Headless', {
      metadata: metadata(identity.headlessServiceName),
      spec: {
        clusterIp: 'None',
        publishNotReadyAddresses: true,
        selector: { ...identity.selector },
        ports: [
          { name: 'client', port: config.ports.client, targetPort: k8s.IntOrString.fromString('client'), protocol: 'TCP' },
          { name: 'peer', port: config.ports.peer, targetPort: k8s.IntOrString.fromString('peer'), protocol: 'TCP' },
        ],
      },
    });
    this.client = new k8s.KubeService(this, 'Client', {
      metadata: metadata(identity.clientServiceName),
      spec: {
        type: 'ClusterIP',
        selector: { ...identity.selector },
        ports: [{ name: 'client', port: config.ports.client, targetPort: k8s.IntOrString.fromString('client'), protocol: 'TCP' }],
      },
    });
  }
}
