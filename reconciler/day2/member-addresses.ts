import type { ClusterIdentity } from '../../model/cluster-identity.js';

/**
 * Where the controller reaches a member: its client API, and the peer URL it
 * registers for a member it adds (which must be the one that member
 * advertises). By default per-pod DNS names through the headless Service;
 * tests map pods to loopback addresses.
 */
export interface MemberAddresses {
  client(namespace: string, pod: string, identity: ClusterIdentity): string;
  peer(namespace: string, pod: string, identity: ClusterIdentity): string;
}
