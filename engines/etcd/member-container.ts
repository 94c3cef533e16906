import { k8s } from 'cdk8s-plus-27';
import { POD_IDENTITY_ENV, type Engine, type MemberContainer, type MemberContainerProps } from '../engine.js';
import { clientUrl, memberName, peerUrl } from './peer-urls.js';
import { clusterToken, dataDirectory, NAMESPACE, POD, memberConfigEnv } from './member-settings.js';
import { restoreContainer } from './restore-container.js';
import { rebuildContainer } from './rebuild-container.js';
import { etcdImageChangeProblem } from './versions.js';
import { compactionArgs } from './compaction.js';
import { corruptionCheckArgs } from './corruption-check.js';
import { backendQuotaBytes } from '../../model/backend-quota.js';
import { memberTls } from './tls-files.js';
import { advertisedClientUrls, clientListener } from './tls-migration.js';

/**
 * A real etcd member from the user's image (registry.k8s.io/etcd and
 * etcd's own images keep `etcd` on the PATH):
 *
 * - named after its pod, advertising its per-pod DNS name, so a rescheduled
 *   pod is the same member with the same volume;
 * - told how to start by the member ConfigMap (memberConfig below), read
 *   once at start: a new cluster bootstraps with exactly `size` members,
 *   every pod at once (podManagementPolicy Parallel; the headless Service
 *   publishes not-ready addresses, so they find each other before any is
 *   ready); a member added later joins the existing cluster. Once a member's
 *   data directory exists etcd ignores all of it: a restarted member rejoins
 *   with what it stored, and a membership change never touches the pod
 *   template, so it restarts no running member;
 * - data in a directory of its own on the member's volume (etcd wants 0700,
 *   which it sets on a directory it creates, not on the volume's root);
 * - probed on the metrics listener, apart from client traffic: /livez (the
 *   process serves) for startup and liveness, /readyz (it has a leader and
 *   applies) for readiness;
 * - stopped by SIGTERM, on which a leader hands leadership to another member
 *   before it exits; the grace period leaves room for that and a final sync;
 * - bounded by itself (spec.maintenance, docs/maintenance.md): it compacts
 *   its history (compaction.ts) and its database may grow to the backend
 *   quota (model/backend-quota.ts), not etcd's 2 GiB default. Both are
 *   arguments, read at start: a change is a new pod template, which the
 *   controller rolls one member at a time (upgrade.ts);
 * - checked for corruption: the leader compares the members' data
 *   periodically (corruption-check.ts), a CORRUPT alarm on a difference.
 *
 * - TLS with client-certificate authentication on the peer and the client
 *   listeners, each on its own (spec.tls, model/tls.ts): the members'
 *   certificate and the cluster's CA from the member Secret, mounted
 *   read-only (tls-files.ts). The metrics listener stays plain HTTP and
 *   serves /metrics, /livez and /readyz only, so the probes and scraping
 *   need no certificate (docs/security.md).
 */
export const etcdEngine: Engine = {
  name: 'etcd',
  memberContainer({ identity, spec, config, tls }: MemberContainerProps): MemberContainer {
    const { client, peer, metrics } = config.ports;
    const secured = memberTls(tls, config, identity);
    // Timing passed in rather than spread over probe()'s result: `{ ...probe(), periodSeconds }` took V8's slow
    // object-copy path, 2 µs of every cluster's synthesis for three small objects.
    const probe = (path: string, timing: Pick<k8s.Probe, 'periodSeconds' | 'failureThreshold' | 'timeoutSeconds'>) => ({
      httpGet: { path, port: k8s.IntOrString.fromString('metrics'), scheme: 'HTTP' },
      ...timing,
    });
    return {
      command: ['etcd'],
      args: [
        `--name=${POD}`,
        `--data-dir=${dataDirectory(config)}`,
        `--listen-peer-urls=${tls.peer ? 'https' : 'http'}://0.0.0.0:${peer}`,
        // During a migration's grace period one port serves both: etcd multiplexes plain HTTP and TLS on one address (tls-migration.ts).
        `--listen-client-urls=${clientListener(tls, client)}`,
        // Plain, whatever the other listeners use: the probes and Prometheus read it without a certificate.
        `--listen-metrics-urls=http://0.0.0.0:${metrics}`,
        `--advertise-client-urls=${advertisedClientUrls(tls, (secure) => clientUrl(identity, POD, NAMESPACE, config, secure))}`,
        `--initial-advertise-peer-urls=${peerUrl(identity, POD, config, tls.peer)}`,
        `--initial-cluster-token=${clusterToken(identity)}`,
        ...compactionArgs(spec),
        `--quota-backend-bytes=${backendQuotaBytes(spec)}`,
        ...secured.args,
        ...corruptionCheckArgs({ spec, config }),
      ],
      env: [...POD_IDENTITY_ENV, ...memberConfigEnv(identity)],
      ports: [
        { name: 'client', containerPort: client, protocol: 'TCP' },
        { name: 'peer', containerPort: peer, protocol: 'TCP' },
        { name: 'metrics', containerPort: metrics, protocol: 'TCP' },
      ],
      // A member of a new cluster is live before it has a quorum; give the others time to start.
      startupProbe: probe('/livez', { periodSeconds: 5, failureThreshold: 60 }),
      // /readyz includes a linearizable read, which waits for a leader: through an election it takes up to two election
      // timeouts (etcd bounds it at 5 s plus those). The kubelet's default of 1 s failed it on the real node whenever
      // leadership moved (the upgrade's transfer) or the node was busy.
      readinessProbe: probe('/readyz', { periodSeconds: 5, failureThreshold: 3, timeoutSeconds: 5 }),
      livenessProbe: probe('/livez', { periodSeconds: 10, failureThreshold: 6, timeoutSeconds: 5 }),
      terminationGracePeriodSeconds: 60,
      // etcd writes why it exited (lost data: "raft log corrupted", "has already been bootstrapped", ...) only to its
      // log; the tail becomes the pod's lastState.terminated.message, which replacement reads (engines/etcd/replacement.ts).
      terminationMessagePolicy: 'FallbackToLogsOnError',
      volumes: secured.volumes.length > 0 ? secured.volumes : undefined,
      volumeMounts: secured.volumeMounts.length > 0 ? secured.volumeMounts : undefined,
    };
  },

  /** etcd's own environment variables: the members 0..replicas-1 (or the plan's own list), and whether they form a new cluster or join one. */
  memberConfig({ identity, config, membership, tls }: MemberContainerProps): Record<string, string> {
    const ordinals = membership.members ?? Array.from({ length: membership.replicas }, (_, i) => i);
    const members = ordinals.map((i) => memberName(identity, i));
    return {
      ETCD_INITIAL_CLUSTER: members.map((member) => `${member}=${peerUrl(identity, member, config, tls.peer)}`).join(','),
      ETCD_INITIAL_CLUSTER_STATE: membership.state,
    };
  },

  volumesWhenScaled: 'Delete',
  updateStrategy: 'OnDelete',
  imageChangeProblem: etcdImageChangeProblem,
  restoreContainer,
  rebuildContainer,
};
