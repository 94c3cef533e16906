/**
 * Which TLS a cluster's members run (spec.tls, docs/security.md): the mode
 * and, apart, whether the peer and the client listeners use TLS with
 * client-certificate authentication.
 *
 * A new cluster runs TLS with operator-issued certificates unless its spec
 * says otherwise. A cluster whose members are already running keeps the
 * scheme they run, whatever the spec asks: moving a listener between plain
 * HTTP and TLS changes every member's peer URL, which must go through the
 * membership one member at a time (the migration, not built yet). So a
 * cluster created before TLS existed stays on plain HTTP after a controller
 * upgrade, and status.tls says why. There is deliberately no schema default:
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
 * schemes, kept until the migration exists.
 */
export function tlsInEffect(spec: Pick<DistributedKVSpec, 'tls'>, live?: LiveTls): TlsInEffect {
  const asked = tlsAsked(spec);
  if (!live || (live.peer === asked.peer && live.client === asked.client)) return asked;
  const scheme = (on: boolean) => (on ? 'TLS' : 'plain HTTP');
  const kept = `the running members use ${scheme(live.peer)} between members and ${scheme(live.client)} for clients`;
  const reason = `${kept}; the spec asks for ${scheme(asked.peer)} and ${scheme(asked.client)}, and moving running members between plain HTTP and TLS (the migration) is not built yet: they keep what they run (docs/security.md)`;
  if (!live.peer && !live.client) return { ...PLAIN, reason };
  return { mode: asked.mode === 'disabled' ? 'operator' : asked.mode, peer: live.peer, client: live.client, reason };
}

/** Whether any listener uses TLS, so certificates are needed. */
export const needsCertificates = (tls: TlsInEffect): boolean => tls.peer || tls.client;
