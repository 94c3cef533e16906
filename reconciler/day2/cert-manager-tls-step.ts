/**
 * The Day-2 TLS step of a cluster whose certificates cert-manager issues
 * (spec.tls mode `cert-manager`, docs/security.md, "cert-manager"): the
 * generator emits the Certificates (constructs/certificates.ts); this step
 * issues nothing and rotates nothing. It reads the two Secrets cert-manager
 * writes (the members' and the client's, the names the operator mode uses),
 * checks each has the shape the members mount (tls.crt, tls.key, ca.crt),
 * that the key is the certificate's, that its ca.crt signed it, and that
 * the client certificate is of the CA the members trust; and hands back the
 * client certificate the controller calls the members with, what status.tls
 * reports, and whether the members must wait.
 *
 * A cluster with no members yet gets no StatefulSet until both Secrets are
 * there and right (reconcile.ts drops its write): no member starts on half
 * a configuration. A running cluster's members keep what they run; a
 * problem is reported (the `TLSSecretsReady` condition, status.tls.reason,
 * a TLSCertificateProblem Event), and the controller writes nothing to
 * them because of it. cert-manager renews the Secrets in place; the kubelet
 * projects the new files and etcd reads the new leaf on its next handshake,
 * as with the controller's own rotation.
 *
 * What it watches of that renewal: each certificate in the Secrets (the
 * members', the client's, the issuer's CA) that cert-manager should have
 * renewed by now and has not is the `CertificateExpiring` condition, True
 * once half the time between its renewal point and its expiry is gone: a
 * leaf cert-manager renews at once at its renewal point, so that half is
 * its failing, not its reconcile, and it leaves the other half to fix the
 * issuer before the members refuse each other.
 */
import type { CachedObject } from '../../kube/informer.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { needsCertificates, type TlsInEffect } from '../../model/tls.js';
import { chainsTo, describeCertificate, keyMatches, notAfter, splitBundle } from '../../model/certificates.js';
import { decodeSecretData } from '../../engines/etcd/secret-data.js';
import { tlsSecretNames } from '../../engines/etcd/tls-files.js';
import { renewalTime } from '../../engines/etcd/certificate-rotation.js';
import type { TlsDecision } from './tls-step.js';

/** The `TLSSecretsReady` condition: the Secrets cert-manager writes are there and usable. */
export interface SecretsReadyCondition {
  readonly status: 'True' | 'False';
  readonly reason: 'SecretsReady' | 'WaitingForCertManager' | 'SecretInvalid' | 'CertManagerCRDMissing';
  readonly message: string;
}

export interface CertManagerTlsDecision extends TlsDecision {
  readonly condition?: SecretsReadyCondition;
  /** The Secrets are missing or unusable: a cluster without members gets none until they are right. */
  readonly holdMembers: boolean;
  /**
   * The API server serves no Certificate kind (cert-manager is not installed): the cluster's Certificates are left
   * out of what is applied, rather than fail every reconcile on a kind it does not know, and the condition says so.
   */
  readonly withholdCertificates: boolean;
  /** Whether a certificate cert-manager should have renewed runs out (see certManagerExpiring); once both Secrets are there. */
  readonly certificateExpiring?: ExpiringCondition;
}

export interface CertManagerTlsInput {
  readonly tls: TlsInEffect;
  readonly identity: ClusterIdentity;
  readonly namespace: string;
  readonly config: Pick<GeneratorConfig, 'tls'>;
  /** A cached Secret of the cluster's namespace by name, carrying the cluster's labels (cert-manager's secretTemplate puts them there). */
  readonly secret: (name: string) => CachedObject | undefined;
  readonly now: Date;
  /** The API server serves cert-manager.io/v1 Certificates (reconciler/core/served-kind.ts). */
  readonly certificatesServed: boolean;
}

export const CERT_MANAGER_CRD_MISSING = 'spec.tls.mode is cert-manager, but the API server serves no cert-manager.io/v1 Certificate: install cert-manager; '
  + 'the cluster\'s Certificates are applied once it is served, and a new cluster\'s members start once cert-manager wrote their Secrets (docs/security.md, "cert-manager")';

/** The `CertificateExpiring` condition, as the operator mode's rotation reports it too. */
export interface ExpiringCondition {
  readonly status: 'True' | 'False';
  readonly reason: 'AsExpected' | 'NotRenewed';
  readonly message: string;
}

/** One certificate cert-manager (or, for the CA, whoever runs the issuer) keeps renewed, as a Secret holds it. */
interface Watched {
  readonly what: string;
  readonly pem: string | undefined;
  /** What to look at when it is not renewed. */
  readonly fix: string;
}

/**
 * The `CertificateExpiring` condition of this mode: True, naming each
 * certificate, its expiry and where to look, once a certificate is past
 * half the time between its renewal point (`fraction` of its validity, the
 * Certificates' renewBeforePercentage) and its expiry, or expired.
 */
export function certManagerExpiring(watched: readonly Watched[], now: Date, fraction: number): ExpiringCondition {
  const overdue = watched.flatMap(({ what, pem, fix }) => {
    const validity = pem?.includes('-----BEGIN') ? describeCertificate(splitBundle(pem)[0] ?? '') : undefined;
    if (!validity) return [];
    const renewAt = renewalTime(validity, fraction).getTime();
    const alarmAt = renewAt + (validity.notAfter.getTime() - renewAt) / 2;
    if (now.getTime() < alarmAt) return [];
    const expired = now.getTime() >= validity.notAfter.getTime();
    return [`${what} ${expired ? 'expired' : 'expires'} ${validity.notAfter.toISOString()} (due for renewal since ${new Date(renewAt).toISOString()}): ${fix}`];
  });
  if (overdue.length === 0) return { status: 'False', reason: 'AsExpected', message: 'no certificate is overdue for renewal by cert-manager' };
  return { status: 'True', reason: 'NotRenewed', message: overdue.join('; ') };
}

const REQUIRED_KEYS = ['tls.crt', 'tls.key', 'ca.crt'] as const;

/** Who issues, as status.tls.issuedBy says it. */
export function certManagerIssuer(config: Pick<GeneratorConfig, 'tls'>): string {
  const { kind, name, group } = config.tls.certManager.issuerRef;
  return `cert-manager ${kind}/${name}${group === 'cert-manager.io' ? '' : ` (${group})`}`;
}

/**
 * What is wrong with one Secret's decoded data, each problem naming the
 * Secret and the key: a missing key, a key that is not PEM, a private key
 * that is not the certificate's, a ca.crt that did not sign the certificate,
 * or (`trusted`, the members' ca.crt) a certificate of another CA.
 */
export function secretProblems(secret: string, data: Readonly<Record<string, string>>, trusted?: { readonly secret: string; readonly ca: string }): string[] {
  const missing = REQUIRED_KEYS.filter((k) => !data[k]?.includes('-----BEGIN'));
  if (missing.length > 0) return [`Secret ${secret}: data.${missing.join(', data.')} missing or not PEM (cert-manager writes tls.crt, tls.key and ca.crt; an issuer that writes no ca.crt cannot serve etcd, which needs the CA it trusts)`];
  const problems: string[] = [];
  if (splitBundle(data['tls.crt']).length === 0) problems.push(`Secret ${secret}: data.tls.crt holds no certificate`);
  else if (!keyMatches(data['tls.crt'], data['tls.key'])) problems.push(`Secret ${secret}: data.tls.key is not the private key of the certificate in data.tls.crt`);
  else if (!chainsTo(data['tls.crt'], data['ca.crt'])) problems.push(`Secret ${secret}: data.tls.crt is not signed by the CA in data.ca.crt`);
  else if (trusted && !chainsTo(data['tls.crt'], trusted.ca)) problems.push(`Secret ${secret}: data.tls.crt is not signed by the CA the members trust (data.ca.crt of Secret ${trusted.secret}): both Certificates must name the same issuer`);
  return problems;
}

export function certManagerTlsStep(input: CertManagerTlsInput): CertManagerTlsDecision {
  const decided = fromSecrets(input);
  if (input.certificatesServed || !needsCertificates(input.tls)) return decided;
  // Secrets still there (cert-manager removed after they were written) are used as ever: the members run on them.
  const problem = [CERT_MANAGER_CRD_MISSING, decided.condition?.reason === 'SecretInvalid' ? decided.problem : undefined].filter(Boolean).join('; ');
  return { ...decided, withholdCertificates: true, problem, condition: { status: 'False', reason: 'CertManagerCRDMissing', message: CERT_MANAGER_CRD_MISSING } };
}

/** The step as the Secrets alone decide it. */
function fromSecrets(input: CertManagerTlsInput): CertManagerTlsDecision {
  const { tls, identity, namespace, config } = input;
  const issuedBy = certManagerIssuer(config);
  const status = { mode: tls.mode, peer: tls.peer, client: tls.client, issuedBy, ...(tls.reason ? { reason: tls.reason } : {}) };
  if (!needsCertificates(tls)) return { create: [], status, holdMembers: false, withholdCertificates: false };
  const names = tlsSecretNames(config, identity);
  const read = (name: string) => {
    const secret = input.secret(name);
    return secret && decodeSecretData(secret.data as Record<string, string> | undefined);
  };
  const member = read(names.member);
  const client = read(names.client);

  const missing = [[names.member, member], [names.client, client]].filter(([, data]) => !data).map(([name]) => `${namespace}/${name}`);
  if (missing.length > 0) {
    const message = `waiting for cert-manager to write Secret ${missing.join(' and Secret ')} (the Certificates of the same names, issued by ${issuedBy}; a Secret needs the cluster's labels, which the Certificates' secretTemplate gives it)`;
    return { create: [], status, problem: message, holdMembers: true, withholdCertificates: false, condition: { status: 'False', reason: 'WaitingForCertManager', message } };
  }
  const problems = [
    ...secretProblems(names.member, member!),
    ...secretProblems(names.client, client!, member!['ca.crt'] ? { secret: names.member, ca: member!['ca.crt'] } : undefined),
  ];
  const certificateName = (name: string) => (input.secret(name)?.metadata.annotations?.['cert-manager.io/certificate-name'] as string | undefined) ?? name;
  const renewedBy = (name: string) => `cert-manager has not renewed it: see kubectl describe certificate ${certificateName(name)} -n ${namespace}, and ${issuedBy}`;
  const certificateExpiring = certManagerExpiring([
    { what: `the members' certificate (Secret ${names.member})`, pem: member!['tls.crt'], fix: renewedBy(names.member) },
    { what: `the client certificate (Secret ${names.client})`, pem: client!['tls.crt'], fix: renewedBy(names.client) },
    { what: `the issuer's CA certificate (ca.crt of Secret ${names.member})`, pem: member!['ca.crt'], fix: `renew the CA of ${issuedBy}, then restart the members once cert-manager wrote it into both Secrets (docs/security.md, "Renewal: cert-manager's")` },
  ], input.now, config.tls.renewalFraction);
  const expiry = (pem: string | undefined) => (pem?.includes('-----BEGIN') ? notAfter(pem) : undefined);
  const dates = {
    ...(expiry(member!['ca.crt']) ? { certificateAuthorityNotAfter: expiry(member!['ca.crt']) } : {}),
    ...(expiry(member!['tls.crt']) ? { memberCertificateNotAfter: expiry(member!['tls.crt']) } : {}),
    ...(expiry(client!['tls.crt']) ? { clientCertificateNotAfter: expiry(client!['tls.crt']) } : {}),
  };
  if (problems.length > 0) {
    const message = problems.join('; ');
    return {
      create: [], status: { ...status, ...dates }, problem: message, holdMembers: true, withholdCertificates: false, condition: { status: 'False', reason: 'SecretInvalid', message }, certificateExpiring,
    };
  }
  return {
    create: [],
    status: { ...status, ...dates },
    holdMembers: false,
    withholdCertificates: false,
    certificateExpiring,
    condition: { status: 'True', reason: 'SecretsReady', message: `the members' and the client certificate are issued by ${issuedBy} and renewed by cert-manager` },
    clientTls: tls.client ? { ca: client!['ca.crt'], cert: client!['tls.crt'], key: client!['tls.key'] } : undefined,
  };
}
