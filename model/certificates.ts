/**
 * The project's PKI, in memory: a CA, the certificates it signs (the
 * conversion webhook's serving certificate, an etcd cluster's member and
 * client certificates), and the questions rotation asks of them (who signed
 * this, for which names, how much of its life is left). node-forge writes the X.509 (Node's
 * crypto parses certificates but cannot make one); Node makes the keys,
 * natively and off the event loop. node-forge (about 4 MB of a
 * controller's resident memory) is loaded only when a certificate is made:
 * a controller whose Secret already holds a valid one, or that serves no
 * webhook, never needs it.
 */
import { constants, createPrivateKey, createPublicKey, generateKeyPair, privateEncrypt, X509Certificate } from 'node:crypto';
import { promisify } from 'node:util';
import type forgeModule from 'node-forge';

import type { LeafRequest } from './leaf-request.js';

export type { LeafRequest } from './leaf-request.js';

type Forge = typeof forgeModule;

const generateRsa = promisify(generateKeyPair);

const loadForge = async (): Promise<Forge> => (await import('node-forge')).default;

/** A certificate and its private key, PEM. */
export interface KeyedCertificate {
  readonly certificate: string;
  readonly privateKey: string;
}

const DAY_MS = 86_400_000;

async function newKey(forge: Forge): Promise<{ publicKey: forgeModule.pki.rsa.PublicKey; pem: string }> {
  const { privateKey, publicKey } = await generateRsa('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  return { publicKey: forge.pki.publicKeyFromPem(publicKey) as forgeModule.pki.rsa.PublicKey, pem: privateKey };
}

/** DER of a SHA-256 DigestInfo before the digest (RFC 8017 §9.2, note 1). */
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

/**
 * A signer node-forge's `certificate.sign` accepts that signs natively
 * (RSASSA-PKCS1-v1_5 over the digest forge computed): forge's own RSA in
 * JavaScript holds the event loop for a long while on a busy machine, and
 * the controller's calls to the members wait on that loop.
 */
function nativeSigner(privateKeyPem: string): forgeModule.pki.rsa.PrivateKey {
  return {
    sign: (md: forgeModule.md.MessageDigest) => privateEncrypt(
      { key: privateKeyPem, padding: constants.RSA_PKCS1_PADDING }, Buffer.concat([SHA256_DIGEST_INFO, Buffer.from(md.digest().getBytes(), 'binary')]),
    ).toString('binary'),
  } as unknown as forgeModule.pki.rsa.PrivateKey;
}

function serial(forge: Forge): string {
  // Positive (leading bit clear) and unique enough for certificates nobody revokes.
  return '01' + forge.util.bytesToHex(forge.random.getBytesSync(15));
}

function validity(cert: forgeModule.pki.Certificate, now: Date, days: number): void {
  // A minute of backdating absorbs clock skew between the controller and the API server.
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + days * DAY_MS);
}

/**
 * A new key and its certificate for `subject`, valid for `days` from `now`,
 * with `extensions`, signed by `issuer` (its key, and its subject as the
 * issuer's name), or by the new key itself when there is none.
 */
async function issueCertificate(
  subject: forgeModule.pki.CertificateField[], issuer: KeyedCertificate | undefined, extensions: object[], now: Date, days: number,
): Promise<KeyedCertificate> {
  const forge = await loadForge();
  const key = await newKey(forge);
  const cert = forge.pki.createCertificate();
  cert.publicKey = key.publicKey;
  cert.serialNumber = serial(forge);
  validity(cert, now, days);
  cert.setSubject(subject);
  cert.setIssuer(issuer ? forge.pki.certificateFromPem(issuer.certificate).subject.attributes : subject);
  cert.setExtensions(extensions);
  cert.sign(nativeSigner(issuer ? issuer.privateKey : key.pem), forge.md.sha256.create());
  return { certificate: forge.pki.certificateToPem(cert), privateKey: key.pem };
}

/** A new self-signed CA, valid for `days`. */
export function createCertificateAuthority(commonName: string, now: Date, days: number): Promise<KeyedCertificate> {
  return issueCertificate([{ name: 'commonName', value: commonName }], undefined, [
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ], now, days);
}

/**
 * A new intermediate CA signed by `root`, valid for `days`, that may sign
 * leaves only (path length 0). An etcd cluster's leaves are issued by one
 * (engines/etcd/certificate-rotation.ts): the members trust only the root,
 * so the intermediate can be replaced, and the old one revoked by its serial,
 * without the members loading a new trust file (which etcd reads only when
 * it starts).
 */
export function createIntermediateAuthority(root: KeyedCertificate, commonName: string, now: Date, days: number): Promise<KeyedCertificate> {
  return issueCertificate([{ name: 'commonName', value: commonName }], root, [
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ], now, days);
}

/** A serving certificate for `dnsNames` and `ipAddresses`, signed by `ca`. */
export function createServingCertificate(
  ca: KeyedCertificate, names: { readonly dnsNames: readonly string[]; readonly ipAddresses: readonly string[] }, now: Date, days: number,
): Promise<KeyedCertificate> {
  return createLeafCertificate(ca, { commonName: names.dnsNames[0] ?? names.ipAddresses[0] ?? 'dkv-conversion-webhook', ...names, server: true, client: false }, now, days);
}

/** A leaf certificate signed by `ca`, valid for `days` from `now` (a `now` in the past makes an expired one). */
export function createLeafCertificate(ca: KeyedCertificate, request: LeafRequest, now: Date, days: number): Promise<KeyedCertificate> {
  const subject = [
    ...(request.organization ? [{ name: 'organizationName', value: request.organization }] : []),
    ...(request.commonName ? [{ name: 'commonName', value: request.commonName }] : []),
  ];
  const altNames = [...request.dnsNames.map((value) => ({ type: 2, value })), ...request.ipAddresses.map((ip) => ({ type: 7, ip }))];
  return issueCertificate(subject, ca, [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: request.server, clientAuth: request.client },
    ...(altNames.length > 0 ? [{ name: 'subjectAltName', altNames }] : []),
  ], now, days);
}

/** The certificates of a PEM bundle, in order. */
export function splitBundle(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g)?.map((c) => (c.endsWith('\n') ? c : `${c}\n`)) ?? [];
}

/** Whether `pem` parses, is unexpired at `now`, and has more than `minFraction` of its life left. */
export function freshEnough(pem: string, now: Date, minFraction: number): boolean {
  const cert = parse(pem);
  if (!cert) return false;
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return now.getTime() < to && (to - now.getTime()) > (to - from) * minFraction;
}

/** When `pem` expires, as an ISO date-time; undefined when it does not parse. */
export function notAfter(pem: string): string | undefined {
  const cert = parse(pem);
  return cert && new Date(cert.validTo).toISOString();
}

/** Whether `leafPem` parses and was signed by `caPem`. */
export function signedBy(leafPem: string, caPem: string): boolean {
  const leaf = parse(leafPem);
  const ca = parse(caPem);
  return leaf !== undefined && ca !== undefined && leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
}

/**
 * Whether the first certificate of `chainPem` (a leaf, then the
 * intermediates it was sent with, as in a tls.crt) chains to `rootPem`:
 * signed by it directly, or by an intermediate of the chain that it signed.
 */
export function chainsTo(chainPem: string, rootPem: string): boolean {
  const [leaf, ...intermediates] = splitBundle(chainPem);
  if (!leaf) return false;
  if (signedBy(leaf, rootPem)) return true;
  return intermediates.some((intermediate) => signedBy(leaf, intermediate) && signedBy(intermediate, rootPem));
}

/** Whether `keyPem` is the private key of the first certificate of `certificatePem` (a Secret's tls.key and tls.crt). */
export function keyMatches(certificatePem: string, keyPem: string): boolean {
  const cert = parse(certificatePem);
  try {
    const fromKey = createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' });
    return cert !== undefined && cert.publicKey.export({ type: 'spki', format: 'der' }).equals(fromKey);
  } catch {
    return false;
  }
}

/** When a certificate's validity begins and ends. */
export interface Validity {
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** The first certificate's validity, serial (hex, upper case, as Node prints it) and SHA-256 fingerprint; undefined when it does not parse. */
export function describeCertificate(pem: string): (Validity & { readonly serial: string; readonly fingerprint256: string }) | undefined {
  const cert = parse(pem);
  return cert && { notBefore: new Date(cert.validFrom), notAfter: new Date(cert.validTo), serial: cert.serialNumber.toUpperCase(), fingerprint256: cert.fingerprint256 };
}

/** Whether `pem` is still valid at `now`. */
export function unexpired(pem: string, now: Date): boolean {
  const cert = parse(pem);
  return cert !== undefined && now.getTime() < Date.parse(cert.validTo);
}

/** Whether `servingPem` was signed by `caPem` and names every one of `dnsNames` and `ipAddresses`. */
export function servesFor(servingPem: string, caPem: string, names: { readonly dnsNames: readonly string[]; readonly ipAddresses: readonly string[] }): boolean {
  const serving = parse(servingPem);
  const ca = parse(caPem);
  if (!serving || !ca || !serving.checkIssued(ca) || !serving.verify(ca.publicKey)) return false;
  return names.dnsNames.every((name) => serving.checkHost(name, { subject: 'never' }) === name)
    && names.ipAddresses.every((ip) => serving.checkIP(ip) === ip);
}

function parse(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}
