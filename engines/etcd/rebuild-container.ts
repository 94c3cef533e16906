/**
 * The `recover` init container every etcd member pod runs before etcd:
 * `dkv rebuild-member` (quorum-rebuild.ts), which does nothing unless a
 * quorum-loss recovery names this pod and its data is the recorded
 * member's. It reads the recovery ConfigMap (optional: absent, as it is
 * outside a recovery, it sets nothing) when the pod starts: the controller
 * writes the ConfigMap before it restarts the member it rebuilds from.
 *
 * Every member pod carries it, not only the chosen one: a pod template is
 * the same for every member, and the choice is made when the quorum is
 * lost, long after the template was written.
 */
import type { MemberContainerProps, RestoreContainer } from '../engine.js';
import { POD_IDENTITY_ENV } from '../engine.js';
import { clusterToken, dataDirectory, POD } from './member-settings.js';
import { peerUrl } from './peer-urls.js';

/** The recovery ConfigMap of a cluster: the controller's recorded decision, read by every member's init container. */
export const recoveryConfigName = (identity: MemberContainerProps['identity']): string => `${identity.statefulSetName}-recovery`;

export function rebuildContainer({ identity, config, tls }: MemberContainerProps): RestoreContainer {
  return {
    command: ['dkv', 'rebuild-member'],
    args: [
      `--data-dir=${dataDirectory(config)}`,
      `--name=${POD}`,
      `--initial-cluster-token=${clusterToken(identity)}`,
      // The scheme the member advertises: etcdutl writes the peer URL into the rebuilt membership.
      `--initial-advertise-peer-urls=${peerUrl(identity, POD, config, tls.peer)}`,
    ],
    env: [...POD_IDENTITY_ENV],
    envFrom: [{ configMapRef: { name: recoveryConfigName(identity), optional: true } }],
  };
}
