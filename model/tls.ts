/**
 * Which TLS a cluster's members run (spec.tls, docs/security.md): the mode
 * and, apart, whether the peer and the client listeners use TLS with
 * client-certificate authentication.
 *
 * A new cluster runs TLS with operator-issued certificates unless its spec
 * says otherwise. A cluster whose members are already running keeps the
 * scheme they run unless the spec asks for TLS explicitly (`mode: operator`):
 * moving a listener from plain HTTP to TLS changes every member's peer URL,
 * which goes through the membership one member at a time (the migration,
 * engines/etcd/tls-migration.ts). So a cluster created before TLS existed
 * stays on plain HTTP after a controller upgrade until its spec says
 * `mode: operator`, and status.tls says why; TLS back to plain is refused. There is deliberately no schema default:
 * the API server applies a schema default to stored objects too, and would
 * turn TLS on in the spec of every existing cluster.
 */
import type { DistributedKVSpec } from '../imports/distributedkv.js';

export type TlsMode = NonNullable<NonNullable<DistributedKVSpec['tls']>['mode']>;

export interface TlsInEffect {
  readonly mode: TlsMode;
  /** Members replicate over TLS and accept only peers with a certificate of the cluster's CA. */
  readonly peer: boolean;
  /** The client port serves TLS and accepts only clients with a certificate of the cluster's CA. */
  readonly client: boolean;
  /** Why this differs from what the spec asks, when it does. */
  readonly reason?: string;
  /**
   * A running plain cluster on its way to TLS (engines/etcd/tls-migration.ts):
   * `peerCertificates`, the members carry the certificate and the CA to dial
   * peers that advertise https though their own peer listener is still
   * plain; `plainClients`, the client port serves plain HTTP beside TLS (the
   * clients' grace period). Absent: no migration under way.
   */
  readonly transition?: { readonly peerCertificates: boolean; readonly plainClients: boolean };
}

/** The schemes the live members run (read from their StatefulSet by the engine). */
export interface LiveTls {
  readonly peer: boolean;
  readonly client: boolean;
}

/** Plain HTTP on both listeners. */
export const PLAIN: TlsInEffect = { mode: 'disabled', peer: false, client: false };

/** What the spec asks for, for a cluster that has no members yet. */
export function tlsAsked(spec: Pick<DistributedKVSpec, 'tls'>): TlsInEffect {
  const mode = spec.tls?.mode ?? 'operator';
  if (mode === 'disabled') return PLAIN;
  return { mode, peer: spec.tls?.peer?.enabled ?? true, client: spec.tls?.client?.enabled ?? true };
}

/**
 * What the members run: what the spec asks for a new cluster (`live`
 * undefined: no StatefulSet yet, or `dkv synth`), else the live members'
 * schemes (a migration under way renders its own: tls-migration.ts).
 */
export function tlsInEffect(spec: Pick<DistributedKVSpec, 'tls'>, live?: LiveTls): TlsInEffect {
  const asked = tlsAsked(spec);
  if (!live || (live.peer === asked.peer && live.client === asked.client)) return asked;
  const scheme = (on: boolean) => (on ? 'TLS' : 'plain HTTP');
  const kept = `the running members use ${scheme(live.peer)} between members and ${scheme(live.client)} for clients`;
  const reason = live.peer || live.client
    ? `${kept}; the spec asks for ${scheme(asked.peer)} and ${scheme(asked.client)}, and moving running members from TLS back to plain HTTP is not built: they keep what they run (docs/security.md)`
    : `${kept}; the spec asks for ${scheme(asked.peer)} and ${scheme(asked.client)}, which a running cluster is moved to only when its spec says so explicitly: set spec.tls.mode: operator to start the migration, member by member (docs/security.md)`;
  if (!live.peer && !live.client) return { ...PLAIN, reason };
  return { mode: asked.mode === 'disabled' ? 'operator' : asked.mode, peer: live.peer, client: live.client, reason };
}

/** Whether any listener uses TLS (or is on its way to it), so certificates are needed. */
export const needsCertificates = (tls: TlsInEffect): boolean => tls.peer || tls.client || Boolean(tls.transition?.peerCertificates);
