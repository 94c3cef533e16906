import { k8s } from 'cdk8s-plus-27';
import { POD_IDENTITY_ENV, type Engine, type MemberContainer, type MemberContainerProps } from '../engine.js';
import { clientUrl, memberName, peerUrl } from './peer-urls.js';

/** Kubernetes expands these in arguments from the pod's own environment. */
const POD = '$(POD_NAME)';
const NAMESPACE = '$(POD_NAMESPACE)';

/**
 * A real etcd member from the user's image (registry.k8s.io/etcd and
 * etcd's own images keep `etcd` on the PATH):
 *
 * - named after its pod, advertising its per-pod DNS name, so a rescheduled
 *   pod is the same member with the same volume;
 * - bootstrapping with exactly `size` members: every pod of a new cluster
 *   starts at once (podManagementPolicy Parallel) and the headless Service
 *   publishes not-ready addresses, so they find each other before any is
 *   ready. Once a member's data directory exists, etcd ignores the
 *   `--initial-*` flags: a restarted member rejoins with what it stored;
 * - data in a directory of its own on the member's volume (etcd wants 0700,
 *   which it sets on a directory it creates, not on the volume's root);
 * - probed on the metrics listener, apart from client traffic: /livez (the
 *   process serves) for startup and liveness, /readyz (it has a leader and
 *   applies) for readiness;
 * - stopped by SIGTERM, on which a leader hands leadership to another member
 *   before it exits; the grace period leaves room for that and a final sync.
 *
 * Plain HTTP between members: TLS for peer and client traffic is not yet
 * generated (see README).
 */
export const etcdEngine: Engine = {
  name: 'etcd',
  memberContainer({ identity, spec, config }: MemberContainerProps): MemberContainer {
    const { client, peer, metrics } = config.ports;
    const initialCluster = Array.from({ length: spec.size }, (_, i) => memberName(identity, i))
      .map((member) => `${member}=${peerUrl(identity, member, NAMESPACE, config)}`)
      .join(',');
    const probe = (path: string) => ({ httpGet: { path, port: k8s.IntOrString.fromString('metrics'), scheme: 'HTTP' } });
    return {
      command: ['etcd'],
      args: [
        `--name=${POD}`,
        `--data-dir=${config.dataPath}/etcd`,
        `--listen-peer-urls=http://0.0.0.0:${peer}`,
        `--listen-client-urls=http://0.0.0.0:${client}`,
        `--listen-metrics-urls=http://0.0.0.0:${metrics}`,
        `--advertise-client-urls=${clientUrl(identity, POD, NAMESPACE, config)}`,
        `--initial-advertise-peer-urls=${peerUrl(identity, POD, NAMESPACE, config)}`,
        `--initial-cluster=${initialCluster}`,
        '--initial-cluster-state=new',
        `--initial-cluster-token=${identity.statefulSetName}.${NAMESPACE}`,
      ],
      env: [...POD_IDENTITY_ENV],
      ports: [
        { name: 'client', containerPort: client, protocol: 'TCP' },
        { name: 'peer', containerPort: peer, protocol: 'TCP' },
        { name: 'metrics', containerPort: metrics, protocol: 'TCP' },
      ],
      // A member of a new cluster is live before it has a quorum; give the others time to start.
      startupProbe: { ...probe('/livez'), periodSeconds: 5, failureThreshold: 60 },
      readinessProbe: { ...probe('/readyz'), periodSeconds: 5, failureThreshold: 3 },
      livenessProbe: { ...probe('/livez'), periodSeconds: 10, failureThreshold: 6, timeoutSeconds: 5 },
      terminationGracePeriodSeconds: 60,
    };
  },
};
