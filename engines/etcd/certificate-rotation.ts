/**
 * When an etcd cluster's certificates are renewed, and the order in which
 * its issuing CA is replaced (spec.tls mode `operator`, docs/security.md,
 * "Rotation"). Pure decisions: reconciler/day2/certificate-rotation-step.ts
 * reads the Secrets, dials the members and acts on what these say.
 *
 * What etcd 3.6 reloads (client/pkg/transport/listener.go, listener_tls.go)
 * decides the design:
 * - its certificate and key: read again from the files on every new TLS
 *   handshake, when it serves (client and peer listeners) and when it dials
 *   a peer; so a renewed leaf needs no restart, only the kubelet's swap of
 *   the mounted Secret's files;
 * - its trusted CA file: read once, when the listener and the peer
 *   transport start; a new CA in ca.crt is trusted only after a restart;
 * - its CRL file: read again on every accepted connection, on both
 *   listeners; a connection is refused when any certificate the other side
 *   presented (its leaf, and the intermediates it sent along) has a listed
 *   serial.
 *
 * So the members trust one root CA that never changes while they run (ca.crt,
 * read at start), and the leaves come from an intermediate, the issuer,
 * which every client and member sends with its leaf (tls.crt is the leaf and
 * the issuer). Replacing the issuer needs no new trust: a new issuer signed
 * by the same root is trusted at once; and dropping the old one is listing
 * its serial in the CRL, which refuses every certificate it ever signed,
 * known or not, since no such certificate verifies without it. A cluster
 * issued before rotation existed has no issuer (the root signed its leaves):
 * its first CA rotation gives it one, and the CRL lists the leaves the root
 * signed that the controller knows, and a probe.
 *
 * A CA rotation goes through three phases, each only after every member was
 * seen to take the one before (the controller dials each member):
 *   Trusting  a new issuer exists; every member must accept a client
 *             certificate from it (a request over a new connection succeeds);
 *   Reissuing the member and client Secrets hold leaves from the new issuer;
 *             every member must serve the new member certificate;
 *   Dropping  the old issuer is promoted away and listed in the CRL; every
 *             member must refuse a probe certificate of the old issuer.
 * Then the phase is Idle again.
 */
import type { Validity } from '../../model/certificates.js';

/** cert-manager's default: a certificate is renewed once two thirds of its validity have passed. */
export const DEFAULT_RENEWAL_FRACTION = 2 / 3;

/** When a certificate of this validity enters its renewal window. */
export function renewalTime(validity: Validity, fraction: number): Date {
  const from = validity.notBefore.getTime();
  return new Date(from + (validity.notAfter.getTime() - from) * fraction);
}

/** Whether a certificate is due for renewal at `now`: `fraction` of its validity has passed (or it has expired). */
export function renewalDue(validity: Validity, now: Date, fraction: number): boolean {
  return now.getTime() >= renewalTime(validity, fraction).getTime();
}

export type CaRotationPhase = 'Idle' | 'Trusting' | 'Reissuing' | 'Dropping';

/** What the CA Secret and the leaf Secrets say about a rotation (read by the step). */
export interface RotationState {
  /** The issuer the leaves come from now (the root, for a cluster issued before rotation). */
  readonly issuer: Validity;
  /** Whether the current issuer is the root itself (no intermediate yet). */
  readonly rootIssues: boolean;
  /** A new issuer being rolled in. */
  readonly next?: { readonly leavesIssued: boolean };
  /** A retired issuer listed in the CRL, until every member is seen to refuse it. */
  readonly retiring: boolean;
  /** The rotate-ca annotation's value, and the value the last rotation started for. */
  readonly requested?: string;
  readonly lastRequest?: string;
}

/** What each member was seen to do, by pod (undefined: not dialled, or no answer). */
export interface MemberObservation {
  /** A request with a client certificate of the new issuer, over a new connection, succeeded. */
  readonly acceptsNext?: boolean;
  /** The member served the current member certificate (its fingerprint matched). */
  readonly servesCurrent?: boolean;
  /** A request with the retired issuer's probe certificate, over a new connection, failed. */
  readonly refusesRetired?: boolean;
}

export type CaRotationAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'start'; readonly why: string }
  | { readonly kind: 'reissue' }
  | { readonly kind: 'promote' }
  | { readonly kind: 'forget' }
  | { readonly kind: 'wait'; readonly waitingFor: readonly string[] };

/** The phase a rotation is in, from what is stored. */
export function caRotationPhase(state: Pick<RotationState, 'next' | 'retiring'>): CaRotationPhase {
  if (state.retiring) return 'Dropping';
  if (state.next) return state.next.leavesIssued ? 'Reissuing' : 'Trusting';
  return 'Idle';
}

/**
 * The next step of the CA rotation: start one (the issuer's renewal is due,
 * or the annotation asks with a value not acted on yet), or move the one
 * under way on once every member in `members` took the phase it is in.
 */
export function caRotationAction(state: RotationState, members: ReadonlyMap<string, MemberObservation>, now: Date, fraction: number): CaRotationAction {
  const phase = caRotationPhase(state);
  const pending = (took: (o: MemberObservation) => boolean | undefined) => [...members].filter(([, o]) => took(o) !== true).map(([pod]) => pod).sort();
  const waitOr = (waitingFor: string[], then: CaRotationAction): CaRotationAction => (members.size === 0 || waitingFor.length > 0 ? { kind: 'wait', waitingFor } : then);
  switch (phase) {
    case 'Trusting':
      return waitOr(pending((o) => o.acceptsNext), { kind: 'reissue' });
    case 'Reissuing':
      return waitOr(pending((o) => o.servesCurrent), { kind: 'promote' });
    case 'Dropping':
      return waitOr(pending((o) => o.refusesRetired), { kind: 'forget' });
    case 'Idle':
      if (state.requested !== undefined && state.requested !== state.lastRequest) return { kind: 'start', why: `asked for by the annotation (${JSON.stringify(state.requested)})` };
      if (state.rootIssues) return { kind: 'none' };
      if (renewalDue(state.issuer, now, fraction)) return { kind: 'start', why: `the issuing CA has used ${Math.round(fraction * 100)}% of its validity (expires ${state.issuer.notAfter.toISOString()})` };
      return { kind: 'none' };
  }
}

/** Which leaves to renew now: each whose renewal is due, or that is not from the issuer leaves come from. */
export function leavesToRenew(
  leaves: Readonly<Record<'member' | 'client', { readonly validity: Validity; readonly fromIssuer: boolean } | undefined>>, now: Date, fraction: number,
): ('member' | 'client')[] {
  return (['member', 'client'] as const).filter((which) => {
    const leaf = leaves[which];
    return leaf !== undefined && (!leaf.fromIssuer || renewalDue(leaf.validity, now, fraction));
  });
}

/**
 * When the controller should look again without anything changing: the
 * earliest renewal time of the certificates given (never in the past: a due
 * one is renewed in this reconcile).
 */
export function nextRenewalCheck(validities: readonly Validity[], now: Date, fraction: number): Date | undefined {
  const times = validities.map((v) => renewalTime(v, fraction).getTime()).filter((t) => t > now.getTime());
  return times.length > 0 ? new Date(Math.min(...times)) : undefined;
}

/** The `revoked` lines of the CA Secret (`<serial> <notAfter>`), parsed. */
export function parseRevoked(text: string | undefined): { serial: string; notAfter: Date }[] {
  return (text ?? '').split('\n').map((l) => l.trim().split(/\s+/)).filter((p) => p.length === 2 && /^[0-9A-F]+$/i.test(p[0]) && !Number.isNaN(Date.parse(p[1])))
    .map(([serial, at]) => ({ serial: serial.toUpperCase(), notAfter: new Date(at) }));
}

/** The `revoked` lines for these entries, without those expired at `now` (an expired certificate is refused anyway). */
export function formatRevoked(entries: readonly { serial: string; notAfter: Date }[], now: Date): string {
  const seen = new Set<string>();
  return entries.filter((e) => e.notAfter.getTime() > now.getTime() && !seen.has(e.serial) && seen.add(e.serial))
    .map((e) => `${e.serial} ${e.notAfter.toISOString()}\n`).join('');
}
