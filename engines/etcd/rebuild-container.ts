/**
 * The `recover` init container every etcd member pod runs before etcd:
 * `dkv rebuild-member` (quorum-rebuild.ts), which rebuilds nothing unless a
 * quorum-loss recovery names this pod and its data is the recorded
 * member's. It reads the recovery ConfigMap (optional: absent, as it is
 * outside a recovery, it sets nothing) when the pod starts: the controller
 * writes the ConfigMap before it restarts the member it rebuilds from.
 *
 * Then it refuses a member whose data is gone while the others list it as
 * started (member-data-check.ts): it reads the member ConfigMap as etcd does
 * (the other members' peer URLs), and, where peers speak TLS, the member's
 * own certificate, which the peers accept. Its refusal is the last line of
 * its log, which the kubelet keeps as its termination message
 * (FallbackToLogsOnError) for replacement to read. A pod is initialized
 * once: a container restarted in a running pod runs etcd again without it
 * (docs/auto-healing.md, "A wiped member", says what catches that case).
 *
 * Every member pod carries it, not only the chosen one: a pod template is
 * the same for every member, and the choice is made when the quorum is
 * lost, long after the template was written.
 */
import type { MemberContainerProps, RestoreContainer } from '../engine.js';
import { POD_IDENTITY_ENV } from '../engine.js';
import { clusterToken, dataDirectory, POD, memberConfigEnv } from './member-settings.js';
import { peerUrl } from './peer-urls.js';
import { memberTls } from './tls-files.js';

/** The recovery ConfigMap of a cluster: the controller's recorded decision, read by every member's init container. */
export const recoveryConfigName = (identity: MemberContainerProps['identity']): string => `${identity.statefulSetName}-recovery`;

export function rebuildContainer({ identity, config, tls }: MemberContainerProps): RestoreContainer {
  const secured = memberTls(tls, config, identity);
  const peerTlsDir = secured.args.find((a) => a.startsWith('--peer-cert-file='))?.replace(/^--peer-cert-file=(.*)\/tls\.crt$/, '$1/');
  return {
    command: ['dkv', 'rebuild-member'],
    args: [
      `--data-dir=${dataDirectory(config)}`,
      `--name=${POD}`,
      `--initial-cluster-token=${clusterToken(identity)}`,
      // The scheme the member advertises: etcdutl writes the peer URL into the rebuilt membership.
      `--initial-advertise-peer-urls=${peerUrl(identity, POD, config, tls.peer)}`,
      ...(peerTlsDir ? [`--peer-tls-dir=${peerTlsDir}`] : []),
    ],
    env: [...POD_IDENTITY_ENV, ...memberConfigEnv(identity)],
    envFrom: [{ configMapRef: { name: recoveryConfigName(identity), optional: true } }],
    volumeMounts: peerTlsDir ? secured.volumeMounts : undefined,
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}
