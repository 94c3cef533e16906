/**
 * What each certificate of an etcd cluster says (spec.tls mode `operator`):
 * the names it serves and what it authenticates. The controller issues them
 * (reconciler/day2/tls-step.ts) from the cluster's own CA.
 *
 * One members' certificate serves every member: a StatefulSet mounts the same
 * Secret into every pod, so a key per member in that Secret would sit in
 * every pod anyway and isolate nothing. It names every address a member is
 * reached by: each ordinal's per-pod name through the headless Service, short
 * (`kv-0.kv-peers`, what the peer URLs use) and qualified up to the fully
 * qualified one (what the client URLs advertise), the client Service by every
 * name a pod resolves it by, and localhost, 127.0.0.1 and ::1 (etcd dials its
 * own client listener, and a probe or a debugging shell in the pod may too).
 * Ordinals cover the schema's largest size, so a scale-out needs no new
 * certificate.
 */
import type { GeneratorConfig } from '../../model/generator-config.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import { X509Certificate } from 'node:crypto';
import { createCertificateAuthority, createIntermediateAuthority, createLeafCertificate, type KeyedCertificate } from '../../model/certificates.js';
import { CLIENT_CERTIFICATE_REQUEST, memberCertificateRequest } from './certificate-requests.js';
import { createRevocationList, type RevokedCertificate } from '../../model/revocation-list.js';
export { REVOCATION_LIST_KEY } from './tls-files.js';

export { CLIENT_CERTIFICATE_REQUEST, MAX_MEMBERS, memberCertificateRequest } from './certificate-requests.js';

/** The data (decoded) of a cluster's three TLS Secrets, in the shape cert-manager writes (tls.crt, tls.key, ca.crt). */
export interface TlsSecretData {
  readonly authority: Readonly<Record<'ca.crt' | 'ca.key', string>>;
  readonly member: Readonly<Record<'tls.crt' | 'tls.key' | 'ca.crt', string>>;
  readonly client: Readonly<Record<'tls.crt' | 'tls.key' | 'ca.crt', string>>;
}

/**
 * The certificates a cluster lacks, issued from its issuing CA (`issuer`, or,
 * for a cluster issued before rotation existed, `authority` itself): a new
 * cluster gets a CA valid `config.tls.caValidityDays` and an issuing CA, an
 * intermediate of it valid `config.tls.issuerValidityDays` (capped by the
 * CA's), which signs the leaves (valid `config.tls.certificateValidityDays`)
 * and can be rotated without a member restart (certificate-rotation.ts).
 * Loads node-forge (model/certificates.ts).
 */
export async function issueClusterCertificates(
  input: {
    readonly identity: Pick<ClusterIdentity, 'statefulSetName' | 'headlessServiceName' | 'clientServiceName'>;
    readonly namespace: string;
    readonly config: Pick<GeneratorConfig, 'clusterDomain' | 'tls'>;
    readonly now: Date;
    readonly authority?: KeyedCertificate;
    readonly issuer?: KeyedCertificate;
  },
  want: { readonly member: boolean; readonly client: boolean },
): Promise<{ authority: KeyedCertificate; issuer?: KeyedCertificate; member?: KeyedCertificate; client?: KeyedCertificate }> {
  const { identity, namespace, config, now } = input;
  const authority = input.authority ?? await createCertificateAuthority(`${identity.statefulSetName}.${namespace} etcd CA`, now, config.tls.caValidityDays);
  const issuer = input.issuer ?? (input.authority ? undefined : await createIssuer(authority, identity, namespace, config, now));
  const signer = issuer ?? authority;
  const days = config.tls.certificateValidityDays;
  const [member, client] = await Promise.all([
    want.member ? createLeafCertificate(signer, memberCertificateRequest(identity, namespace, config), now, days) : undefined,
    want.client ? createLeafCertificate(signer, CLIENT_CERTIFICATE_REQUEST, now, days) : undefined,
  ]);
  return { authority, issuer, member, client };
}

/** A new issuing CA under `authority`, valid `config.tls.issuerValidityDays` but never past the CA itself. */
export function createIssuer(
  authority: KeyedCertificate, identity: Pick<ClusterIdentity, 'statefulSetName'>, namespace: string, config: Pick<GeneratorConfig, 'tls'>, now: Date,
): Promise<KeyedCertificate> {
  const left = (Date.parse(new X509Certificate(authority.certificate).validTo) - now.getTime()) / 86_400_000;
  return createIntermediateAuthority(authority, `${identity.statefulSetName}.${namespace} etcd issuing CA ${now.toISOString()}`, now, Math.max(1, Math.min(config.tls.issuerValidityDays, Math.floor(left))));
}

/** A leaf's Secret data: the leaf and the issuing CA that signed it (when it is not the CA itself), its key, and the CA the members trust. */
export const leafSecretData = (leaf: KeyedCertificate, authority: KeyedCertificate, issuer?: KeyedCertificate): TlsSecretData['member'] => ({
  'tls.crt': issuer ? `${leaf.certificate}${issuer.certificate}` : leaf.certificate, 'tls.key': leaf.privateKey, 'ca.crt': authority.certificate,
});
/** The CA Secret's data: the CA, and the issuing CA when there is one. */
export const authoritySecretData = (authority: KeyedCertificate, issuer?: KeyedCertificate): Readonly<Record<string, string>> => ({
  'ca.crt': authority.certificate, 'ca.key': authority.privateKey, ...(issuer ? { 'issuer.crt': issuer.certificate, 'issuer.key': issuer.privateKey } : {}),
});

/** The CRL of the certificates `revoked`, signed by the CA, as the member Secret carries it (latin1: one character per byte, secret-data.ts). */
export async function revocationListData(authority: KeyedCertificate, revoked: readonly RevokedCertificate[], now: Date, config: Pick<GeneratorConfig, 'tls'>): Promise<string> {
  return (await createRevocationList(authority, revoked, now, config.tls.certificateValidityDays)).toString('latin1');
}
