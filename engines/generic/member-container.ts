import { k8s } from 'cdk8s-plus-27';
import { POD_IDENTITY_ENV, type Engine, type MemberContainer, type MemberContainerProps } from '../engine.js';

/**
 * The extension point: a server of your own that reads its cluster from the
 * environment (DKV_CLUSTER_SIZE, DKV_PEER_SERVICE, DKV_DATA_DIR, POD_NAME,
 * POD_NAMESPACE) and serves TCP on the client port. Probed by TCP connect,
 * which is all this contract promises.
 */
export const genericEngine: Engine = {
  name: 'generic',
  memberContainer({ identity, spec, config }: MemberContainerProps): MemberContainer {
    const tcp = { tcpSocket: { port: k8s.IntOrString.fromString('client') } };
    return {
      env: [
        ...POD_IDENTITY_ENV,
        { name: 'DKV_CLUSTER_SIZE', value: String(spec.size) },
        { name: 'DKV_PEER_SERVICE', value: identity.headlessServiceName },
        { name: 'DKV_DATA_DIR', value: config.dataPath },
      ],
      ports: [
        { name: 'client', containerPort: config.ports.client, protocol: 'TCP' },
        { name: 'peer', containerPort: config.ports.peer, protocol: 'TCP' },
      ],
      startupProbe: { ...tcp, periodSeconds: 5, failureThreshold: 60 },
      readinessProbe: { ...tcp, periodSeconds: 5, failureThreshold: 3 },
      livenessProbe: { ...tcp, periodSeconds: 10, failureThreshold: 6 },
      terminationGracePeriodSeconds: 60,
    };
  },
};
