/**
 * How a member of a new etcd cluster restores a backup: `dkv restore`, in
 * an init container, before etcd starts. etcd's own procedure: every member
 * restores the same snapshot with its own name, peer URL and the full
 * initial cluster (`etcdutl snapshot restore`), which gives each the same
 * data under a new cluster identity; then each starts on its data directory
 * and ignores the bootstrap settings.
 *
 * The arguments are the member's own (the same name, data directory, token
 * and peer URL as the etcd container), and the member ConfigMap says whether
 * the member bootstraps the cluster (`new`: restore) or joins a running one
 * (`existing`, a member added later: start empty and copy from the others).
 * `dkv restore` restores only into a member without a data directory: a
 * restarted member keeps what it has.
 */
import type { MemberContainerProps, RestoreContainer } from '../engine.js';
import { POD_IDENTITY_ENV } from '../engine.js';
import { clusterToken, dataDirectory, POD, memberConfigEnv } from './member-settings.js';
import { peerUrl } from './peer-urls.js';

export function restoreContainer({ identity, config, from, tls }: MemberContainerProps & { readonly from: string }): RestoreContainer {
  return {
    command: ['dkv', 'restore'],
    args: [
      `--from=${from}`,
      `--data-dir=${dataDirectory(config)}`,
      `--name=${POD}`,
      // From the member ConfigMap, as etcd itself reads them.
      '--initial-cluster=$(ETCD_INITIAL_CLUSTER)',
      '--initial-cluster-state=$(ETCD_INITIAL_CLUSTER_STATE)',
      `--initial-cluster-token=${clusterToken(identity)}`,
      // The scheme the member will advertise: etcdutl writes the peer URL into the restored membership.
      `--initial-advertise-peer-urls=${peerUrl(identity, POD, config, tls.peer)}`,
    ],
    env: [...POD_IDENTITY_ENV, ...memberConfigEnv(identity)],
  };
}
