/**
 * Which client identities' certificates the members' CRL lists
 * (docs/client-identities.md, "Revocation"). Pure: it decides from the
 * ledger of what was issued and the Secrets as they are; the core writes.
 *
 * Deleting a client's etcd user is not enough to shut it out: etcd lets any
 * authenticated certificate compact the keyspace and grant leases whatever
 * its user, and a certificate stays valid for its whole life. So every
 * certificate issued to a client identity (root's included) enters a ledger
 * in the cluster's CA Secret BEFORE it is handed out, and an entry leaves
 * the ledger for the CRL, which etcd reads on every new connection:
 *
 * - at once, when its identity is no longer in the spec (a removed client);
 * - at once, when the latest certificate of the same identity was issued
 *   because its Secret was gone (deleted by a human: taken as "revoke this");
 * - `graceMs` after the latest certificate replaced it by renewal: a client
 *   that reads its certificate only at start needs time to pick up the new one;
 * - never while its Secret still holds it, and no later one exists.
 *
 * An entry dropped for expiry needs no listing: etcd refuses an expired
 * certificate anyway. A Secret whose certificate is not in the ledger
 * (issued before the ledger existed) is adopted into it, so it can be
 * revoked later like any other.
 */
import type { RevokedCertificate } from '../../model/revocation-list.js';

/** The CA Secret's key holding the ledger: one line per certificate, `<identity> <serial> <notAfter> <issuedAt> <issue|renewal>`. */
export const LEDGER_KEY = 'client-serials';

/** A certificate the controller issued to a client identity (or found in its Secret). */
export interface IssuedClientCertificate {
  /** The identity: a client's name, or `root`. */
  readonly identity: string;
  /** Hex, upper case (as describeCertificate gives it). */
  readonly serial: string;
  readonly notAfter: Date;
  readonly issuedAt: Date;
  /** Issued to renew a valid predecessor (which then keeps working for the grace), rather than for a Secret that was missing. */
  readonly renewal: boolean;
}

/** A Secret's certificate as read: its serial and validity. */
export interface HeldCertificate {
  readonly serial: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

export interface RevocationInput {
  readonly ledger: readonly IssuedClientCertificate[];
  /** The identities the spec wants now (root's while authentication is on). */
  readonly wanted: ReadonlySet<string>;
  /** Each identity's Secret's certificate, where its Secret exists (a removed client's still may). */
  readonly held: ReadonlyMap<string, HeldCertificate>;
  readonly now: Date;
  /** How long a certificate replaced by renewal stays valid (config clients.supersededGraceSeconds). */
  readonly graceMs: number;
}

export interface RevokedClientCertificate extends RevokedCertificate {
  readonly identity: string;
  readonly why: 'removed' | 'replaced' | 'renewed';
}

export interface RevocationDecision {
  /** Certificates to list in the CRL now. */
  readonly revoke: readonly RevokedClientCertificate[];
  /** The ledger to write: without what was revoked or expired, with what was adopted. */
  readonly ledger: readonly IssuedClientCertificate[];
  /** Whether the ledger differs from the one read (something revoked, expired or adopted): a write is due. */
  readonly changed: boolean;
  /** When the next renewed predecessor's grace ends (a requeue). */
  readonly nextAt?: Date;
}

const byIssue = (a: IssuedClientCertificate, b: IssuedClientCertificate) => a.issuedAt.getTime() - b.issuedAt.getTime() || a.serial.localeCompare(b.serial);

export function decideClientRevocations(input: RevocationInput): RevocationDecision {
  const { now, wanted, held } = input;
  const known = new Set(input.ledger.map((e) => e.serial));
  const adopted = [...held].filter(([, h]) => !known.has(h.serial))
    .map(([identity, h]): IssuedClientCertificate => ({ identity, serial: h.serial, notAfter: h.notAfter, issuedAt: h.notBefore, renewal: false }));
  const all = [...input.ledger, ...adopted].sort(byIssue);
  const revoke: RevokedClientCertificate[] = [];
  const ledger: IssuedClientCertificate[] = [];
  let nextAt: Date | undefined;
  let expired = false;
  for (const entry of all) {
    const listed = (why: RevokedClientCertificate['why']) => revoke.push({ identity: entry.identity, serial: entry.serial, notAfter: entry.notAfter, why });
    if (entry.notAfter.getTime() <= now.getTime()) { expired = true; continue; }
    if (!wanted.has(entry.identity)) { listed('removed'); continue; }
    if (held.get(entry.identity)?.serial === entry.serial) { ledger.push(entry); continue; }
    // The latest certificate issued to the same identity, if later than this one: what replaced it. The latest, not the
    // next: a certificate entered in the ledger whose Secret's write then failed was never handed out, and must not
    // start the grace of the one still in use.
    const successor = all.filter((e) => e.identity === entry.identity).at(-1);
    if (!successor || byIssue(successor, entry) <= 0) { ledger.push(entry); continue; }
    if (!successor.renewal) { listed('replaced'); continue; }
    const due = new Date(successor.issuedAt.getTime() + input.graceMs);
    if (due.getTime() <= now.getTime()) { listed('renewed'); continue; }
    ledger.push(entry);
    if (!nextAt || due < nextAt) nextAt = due;
  }
  return { revoke, ledger, changed: revoke.length > 0 || adopted.length > 0 || expired, ...(nextAt ? { nextAt } : {}) };
}

export function parseLedger(text: string | undefined): IssuedClientCertificate[] {
  return (text ?? '').split('\n').map((l) => l.trim().split(/\s+/))
    .filter((p) => p.length === 5 && /^[0-9A-F]+$/i.test(p[1]) && !Number.isNaN(Date.parse(p[2])) && !Number.isNaN(Date.parse(p[3])) && (p[4] === 'issue' || p[4] === 'renewal'))
    .map(([identity, serial, notAfter, issuedAt, how]) => ({ identity, serial: serial.toUpperCase(), notAfter: new Date(notAfter), issuedAt: new Date(issuedAt), renewal: how === 'renewal' }));
}

export function formatLedger(entries: readonly IssuedClientCertificate[]): string {
  return entries.map((e) => `${e.identity} ${e.serial} ${e.notAfter.toISOString()} ${e.issuedAt.toISOString()} ${e.renewal ? 'renewal' : 'issue'}\n`).join('');
}
