/**
 * An X.509 certificate revocation list (RFC 5280 §5), DER: what etcd's
 * `--client-crl-file` and `--peer-crl-file` read. etcd reads the file again
 * on every accepted TLS connection and refuses the connection when the
 * serial of any certificate the other side presented (its leaf and the
 * intermediates sent with it) is listed (client/pkg/transport/listener_tls.go,
 * checkCRL); it does not check the list's signature or dates, but this one is
 * a proper CRL, signed by the CA that issued what it revokes. node-forge
 * writes no CRLs: the structure is small enough to write here.
 */
import { sign } from 'node:crypto';
import type forgeModule from 'node-forge';
import type { KeyedCertificate } from './certificates.js';

const DAY_MS = 86_400_000;

/** A revoked certificate: its serial (hex) and when it expires (a CRL may forget it after that). */
export interface RevokedCertificate {
  readonly serial: string;
  readonly notAfter: Date;
}

/**
 * A CRL issued by `issuer` listing `revoked`, valid from `now` for `days`
 * (the next update a strict reader expects; etcd does not look).
 */
export async function createRevocationList(issuer: KeyedCertificate, revoked: readonly RevokedCertificate[], now: Date, days: number): Promise<Buffer> {
  const forge: typeof forgeModule = (await import('node-forge')).default;
  const { asn1 } = forge;
  const U = asn1.Class.UNIVERSAL;
  const T = asn1.Type;
  const time = (d: Date) => asn1.create(U, T.UTCTIME, false, asn1.dateToUtcTime(d));
  const algorithm = () => asn1.create(U, T.SEQUENCE, true, [
    asn1.create(U, T.OID, false, asn1.oidToDer(forge.pki.oids.sha256WithRSAEncryption).getBytes()),
    asn1.create(U, T.NULL, false, ''),
  ]);
  const integer = (hex: string) => {
    const even = hex.length % 2 === 0 ? hex : `0${hex}`;
    // A DER INTEGER is signed: a leading byte of 0x80 or more needs a zero before it to stay positive.
    return asn1.create(U, T.INTEGER, false, forge.util.hexToBytes(/^[89a-f]/i.test(even) ? `00${even}` : even));
  };
  const tbs = asn1.create(U, T.SEQUENCE, true, [
    asn1.create(U, T.INTEGER, false, asn1.integerToDer(1).getBytes()), // v2
    algorithm(),
    forge.pki.distinguishedNameToAsn1(forge.pki.certificateFromPem(issuer.certificate).subject),
    time(new Date(now.getTime() - 60_000)),
    time(new Date(now.getTime() + days * DAY_MS)),
    // An empty list is left out, not written as an empty SEQUENCE (RFC 5280 §5.1.2.6).
    ...(revoked.length > 0 ? [asn1.create(U, T.SEQUENCE, true, revoked.map((r) => asn1.create(U, T.SEQUENCE, true, [integer(r.serial), time(now)])))] : []),
  ]);
  const tbsDer = Buffer.from(asn1.toDer(tbs).getBytes(), 'binary');
  const signature = sign('sha256', tbsDer, issuer.privateKey);
  const list = asn1.create(U, T.SEQUENCE, true, [tbs, algorithm(), asn1.create(U, T.BITSTRING, false, `\0${signature.toString('binary')}`)]);
  return Buffer.from(asn1.toDer(list).getBytes(), 'binary');
}
