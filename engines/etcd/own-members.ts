/**
 * Which members of the store are the cluster's own: each advertises the peer
 * URL of one of its StatefulSet's pods (host and port: the scheme moves
 * during the migration to TLS), and, once started, carries that pod's name.
 * Anyone who reaches a client port while it accepts plain HTTP (a
 * migration's grace period) can `member add --learner` a process of their
 * own under any name; a learner is promoted to a voter only when it is the
 * cluster's own, and one that is not is removed (scaling.ts, replacement.ts).
 * Pure: the decisions that use it stay checkable by property tests.
 */
import type { MemberStatus } from '../membership.js';
import { MAX_MEMBERS } from './certificate-requests.js';

/** host:port of a URL, or the text itself when it does not parse. */
function address(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** A pod's peer URL, or undefined where it cannot be told (it gives none, or throws: no address for that pod yet). */
function peerUrlOf(peerUrl: (pod: string) => string | undefined, pod: string): string | undefined {
  try {
    return peerUrl(pod);
  } catch {
    return undefined;
  }
}

/** The pod whose peer address the member advertises, when every peer URL it advertises names that one pod. */
export function podAdvertisedBy(member: Pick<MemberStatus, 'peerUrls'>, pod: (ordinal: number) => string, peerUrl: (pod: string) => string | undefined): string | undefined {
  if (member.peerUrls.length === 0) return undefined;
  const advertised = new Set(member.peerUrls.map(address));
  for (let ordinal = 0; ordinal < MAX_MEMBERS; ordinal++) {
    const url = peerUrlOf(peerUrl, pod(ordinal));
    if (url !== undefined && advertised.size === 1 && advertised.has(address(url))) return pod(ordinal);
  }
  return undefined;
}

/** Whether the member is the cluster's own: it advertises one pod's peer address and, once started, has that pod's name. */
export function isOwnMember(member: Pick<MemberStatus, 'peerUrls' | 'name'>, pod: (ordinal: number) => string, peerUrl: (pod: string) => string | undefined): boolean {
  const advertised = podAdvertisedBy(member, pod, peerUrl);
  return advertised !== undefined && (member.name === '' || member.name === advertised);
}
